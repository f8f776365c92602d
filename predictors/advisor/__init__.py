"""The submit-time advisor: a job script (``#SBATCH``, ``#PBS`` or ``#BSUB``) or a Kubernetes manifest read as a job
request, the model fitted once per store, and the advice (calibrated need, the request to make in the scheduler's
units, the lines to paste, failure warnings) as a dict and as text."""

from .advise import advise, read_job, script_scheduler
from .bsub import parse_bsub
from .job_request import JobRequest, ScriptError, job_row
from .kube import parse_manifest
from .model import FOLDER, AdvisorModel, ModelError, is_current, load_model
from .qsub import parse_qsub
from .sbatch import parse_sbatch
from .submit import fit, predict_script
from .text import advice_text

__all__ = ["FOLDER", "AdvisorModel", "JobRequest", "ModelError", "ScriptError", "advice_text", "advise", "fit",
           "is_current", "job_row", "load_model", "parse_bsub", "parse_manifest", "parse_qsub", "parse_sbatch",
           "predict_script", "read_job", "script_scheduler"]
