"""Kubernetes manifests written by hand: the request each must read as, as the pods reader reads pods."""

from __future__ import annotations

import json

import pytest
import yaml

from predictors.advisor.job_request import ScriptError
from predictors.advisor.kube import parse_manifest

GI = 2**30

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train-resnet
  namespace: vision
spec:
  completions: 4
  activeDeadlineSeconds: 86400
  template:
    metadata:
      labels:
        user: alice
    spec:
      activeDeadlineSeconds: 7200
      nodeSelector:
        pool: a100
      containers:
      - name: trainer
        command: ["torchrun", "--nproc_per_node=4", "train.py"]
        resources:
          requests:
            cpu: 7500m
            memory: 64Gi
          limits:
            memory: 64Gi
            nvidia.com/gpu: 4
      - name: sidecar
        resources:
          requests: {cpu: 100m, memory: 512Mi}
      initContainers:
      - name: fetch
        resources:
          limits: {cpu: "16", memory: 1Gi}
"""


def test_job_reads_as_its_pods_do():
    r = parse_manifest(JOB)
    # CPUs: init container 16 > app 7.5 + 0.1; memory: app 64Gi + 512Mi > init 1Gi; GPUs from limits
    assert (r.cpus, r.mem_bytes, r.gpus) == (16, 64 * GI + 512 * 2**20, 4)
    assert r.time_limit_s == 7200  # the pod's deadline is the smaller
    assert (r.job_name, r.account, r.user, r.partition, r.qos) == ("train-resnet", "vision", "alice", "a100", "Burstable")
    assert r.array_tasks == 4 and r.container == "trainer"
    assert r.lines["memory"] == 23 and r.lines["cpu"] == 22 and r.lines["activeDeadlineSeconds"] == 14
    assert r.commands == [(18, "torchrun --nproc_per_node=4 train.py")]


def test_the_same_job_as_json():
    r = parse_manifest(json.dumps(yaml.safe_load(JOB), indent=2))
    assert (r.cpus, r.gpus, r.time_limit_s, r.user) == (16, 4, 7200, "alice")


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: notebook, namespace: lab}
spec:
  serviceAccountName: bob
  containers:
  - name: jupyter
    resources:
      limits: {cpu: "2", memory: 8G}
"""


def test_pod_request_defaults_to_its_limit_and_is_guaranteed():
    r = parse_manifest(POD)
    assert (r.cpus, r.mem_bytes, r.gpus, r.time_limit_s) == (2, 8e9, 0, None)
    assert (r.user, r.qos, r.partition, r.array_tasks) == ("bob", "Guaranteed", "k8s", 1)


def test_cronjob_and_list_and_several_documents():
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}}}
    assert parse_manifest(json.dumps(cron)).job_name == "nightly"
    lst = {"kind": "List", "items": [{"kind": "Service"}, yaml.safe_load(POD)]}
    assert parse_manifest(json.dumps(lst)).job_name == "notebook"
    assert parse_manifest("kind: ConfigMap\n---\n" + POD).job_name == "notebook"


@pytest.mark.parametrize("text,line,words", [
    (JOB.replace("memory: 64Gi\n          limits", "memory: 64Gb\n          limits"), 23, "not a Kubernetes quantity"),
    (JOB.replace("activeDeadlineSeconds: 86400", "activeDeadlineSeconds: -5"), 8, "activeDeadlineSeconds"),
    (JOB.replace("completions: 4", "completions: four"), 7, "completions"),
    ("kind: Deployment\nmetadata: {name: web}\n", None, "no Job, CronJob or Pod"),
    ("kind: Pod\nspec: {containers: [}\n", 2, "not valid YAML"),
    ("kind: Pod\nmetadata: {name: p}\nspec: {}\n", 3, "no containers"),
])
def test_manifest_mistakes_name_the_line(text, line, words):
    with pytest.raises(ScriptError) as err:
        parse_manifest(text)
    assert err.value.line == line and words in str(err.value)


def test_tags_never_construct_objects():
    with pytest.raises(ScriptError):
        parse_manifest("kind: Pod\nspec: !!python/object/apply:os.system ['true']\n")
