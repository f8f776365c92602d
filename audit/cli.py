"""The ``reclaim`` command: each subcommand is a thin click wrapper over a library function of the same name."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .readers import READABLE
from .textio import InputError

DELIMITER_HELP = ("Field delimiter of sacct text, as given to sacct --delimiter (default: ^|^ when the first line "
                  "holds it, else |); with --format sacct for a delimiter other than those.")


class _LazyChoice(click.Choice):
    """A choice among ``first`` and the names ``load()`` gives, read when first needed (help, a value to check),
    so that the commands that do not take the option do not import the module holding them."""

    def __init__(self, first, load) -> None:
        self._first, self._load, self._choices = tuple(first), load, None
        self.case_sensitive = True

    @property
    def choices(self) -> tuple:
        if self._choices is None:
            self._choices = self._first + tuple(self._load())
        return self._choices


def _schedulers() -> tuple:
    from .collect.scheduler import SCHEDULERS

    return SCHEDULERS


def _fail(exc: Exception) -> None:
    click.echo(f"reclaim: error: {exc}", err=True)
    sys.exit(2)


def _share(ctx, param, value):
    """``1%``, ``0.01`` → 0.01; ``off`` → None (no kill-budget scenario, or no budget of GPU-hours)."""
    if value is None or str(value).strip().lower() in ("off", "none", "no"):
        return None
    text = str(value).strip()
    try:
        share = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(f"a share such as 1% or 0.01, or off; got {value!r}") from None
    if not 0.0 <= share < 1.0:
        raise click.BadParameter(f"a share between 0 and 100 %; got {value!r}")
    return share


KILL_BUDGET_HELP = ("Share of jobs the kill-budget scenario may have killed (1% or 0.01; off: none), spent per "
                    "resource and stratum where a kill frees the most capacity.")
GPU_HOURS_BUDGET_HELP = ("Share of the month's GPU-hours (as asked) the kill-budget scenario may also lose to its "
                         "kills (0.5% or 0.005; off: no such limit).")


class _Commands(click.Group):
    """The subcommands, and the groups that live with their stage (``reclaim predict …``, predictors/), imported only
    when named: a run of ``reclaim ingest`` does not load the predictors."""

    SUBGROUPS = {"predict": ("predictors.cli", "predict")}

    def list_commands(self, ctx) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.SUBGROUPS})

    def get_command(self, ctx, name):
        if name in self.SUBGROUPS and name not in self.commands:
            from importlib import import_module

            module, attr = self.SUBGROUPS[name]
            self.add_command(getattr(import_module(module), attr), name)
        return super().get_command(ctx, name)


@click.group(cls=_Commands)
@click.version_option(package_name="reclaim")
@click.pass_context
def main(ctx) -> None:
    """Reclaim: an offline capacity audit for HPC and GPU clusters."""
    if ctx.invoked_subcommand in _Commands.SUBGROUPS:
        from predictors.cli import READ_TABLE

        ctx.meta[READ_TABLE] = _read_table


def _read_table(paths):
    """Trace files and folders (or one store) → the canonical job table, for ``reclaim predict``."""
    from .ingest import read_table

    return read_table(paths)[0]


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Store directory to write.")
@click.option("--cluster", default=None, help="Cluster name for rows whose input does not name one.")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", *READABLE]), help="Accounting format (auto-detected by default).")
@click.option("--timezone", default="UTC", show_default=True,
              help="Time zone of sacct text timestamps (sacct prints the cluster's local time).")
@click.option("--delimiter", default=None, help=DELIMITER_HELP)
def ingest(paths, out, cluster, fmt, timezone, delimiter) -> None:
    """Read accounting files into DIR/jobs.parquet, ledger.json, quarantine.csv and reclaim.duckdb."""
    from .ingest import ingest as run_ingest
    from .summary_text import ingest_summary

    try:
        result = run_ingest(paths, out, cluster=cluster, fmt=fmt, timezone=timezone, delimiter=delimiter or None)
    except InputError as exc:
        _fail(exc)
    click.echo(ingest_summary(result))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Run directory to write.")
@click.option("--cluster", default=None, help="Cluster name for rows whose input does not name one.")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", *READABLE]))
@click.option("--timezone", default="UTC", show_default=True)
@click.option("--delimiter", default=None, help=DELIMITER_HELP)
@click.option("--price-book", default=None, help="Price book TOML, or a shipped book's name (default cloud-on-demand).")
@click.option("--cluster-shape", default=None, type=click.Path(path_type=Path, exists=True),
              help="Cluster shape TOML (default: one found among the inputs).")
@click.option("--whatif/--no-whatif", default=True, show_default=True,
              help="Run the what-if sweep (recoverable capacity; needs a cluster shape).")
@click.option("--advisor-model/--no-advisor-model", default=True, show_default=True,
              help="Fit and save the submit-time advisor's model in DIR/model (about a minute per 100,000 jobs).")
@click.option("--scheduler", default=None, help="What-if replays on this Dask scheduler (tcp://HOST:8786).")
@click.option("--serial", is_flag=True, help="What-if replays in this process, one after another.")
@click.option("--kill-budget", default="1%", show_default=True, callback=_share, help=KILL_BUDGET_HELP)
@click.option("--gpu-hours-budget", default="off", show_default=True, callback=_share,
              help=GPU_HOURS_BUDGET_HELP)
@click.option("--config", "config_path", default=None, type=click.Path(path_type=Path),
              help="Report config TOML (client, branding, price book, risk, thresholds, pages, anonymisation).")
@click.option("--quiet", is_flag=True, help="No stage lines or progress on stderr.")
def audit(paths, out, cluster, fmt, timezone, delimiter, price_book, cluster_shape, whatif, advisor_model, scheduler,
          serial, kill_budget, gpu_hours_budget, config_path, quiet) -> None:
    """Ingest, account, replay the what-ifs and write the report (PDF, HTML, JSON, CSV) into DIR."""
    from .accounting import PriceBookError
    from .config import load_config
    from .pipeline import audit as run_audit
    from .progress import Progress

    try:
        config = load_config(config_path)
        result = run_audit(paths, out, cluster=cluster, fmt=fmt, timezone=timezone, delimiter=delimiter or None,
                           price_book=price_book, cluster_shape=cluster_shape, whatif=whatif,
                           advisor_model=advisor_model,
                           whatif_options={"scheduler": scheduler, "serial": serial, "quiet": quiet,
                                           "kill_budget": kill_budget, "gpu_hours_budget": gpu_hours_budget},
                           log=None if quiet else lambda text: click.echo(text, err=True), config=config,
                           progress=Progress(quiet=quiet))
    except (InputError, PriceBookError, ValueError) as exc:
        _fail(exc)
    click.echo(f"report: {result.report_pdf}")


@main.command()
@click.argument("store", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--price-book", default=None, help="Price book TOML, or a shipped book's name (default cloud-on-demand).")
@click.option("--cluster-shape", default=None, type=click.Path(path_type=Path, exists=True),
              help="Cluster shape TOML, for occupancy, GPU memory held and the dominant-resource view.")
def account(store, price_book, cluster_shape) -> None:
    """Account an ingested store: waste.parquet, aggregates/, failed_jobs.csv, occupancy.parquet, summary.json."""
    from .accounting import PriceBookError
    from .accounting import account as run_account

    try:
        result = run_account(store, price_book=price_book, cluster_shape=cluster_shape)
    except (InputError, PriceBookError) as exc:
        _fail(exc)
    s = result.summary
    click.echo(f"{store}: {s['jobs']:,} jobs, {s['core_hours_alloc']:,.0f} core-h allocated, "
               f"{s['gpu_hours_alloc']:,.0f} GPU-h allocated; priced with {s.get('price_book')}")
    click.echo(f"wrote {store}/summary.json, waste.parquet, aggregates/, failed_jobs.csv")


@main.command()
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Directory to write the trace into.")
@click.option("--jobs", default=122_000, show_default=True, type=int, help="Number of jobs.")
@click.option("--days", default=30.0, show_default=True, type=float, help="Span of submissions in days.")
@click.option("--cluster", "cluster_spec", default=None, type=click.Path(path_type=Path, exists=True),
              help="Cluster shape TOML (default: the built-in mixed CPU/GPU cluster).")
@click.option("--profile", default=None, type=click.Path(path_type=Path, exists=True),
              help="Workload profile TOML (default: the built-in calibrated profile).")
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--corrupt", default=0, show_default=True, type=int, help="Inject this many corrupted sacct lines.")
@click.option("--telemetry-interval", "telemetry_interval_s", default=None, type=int,
              help="DCGM sample interval in seconds (default: the profile's).")
@click.option("--no-telemetry", is_flag=True, help="Write no telemetry files (GPU truth is still computed).")
@click.option("--format", "fmt", default="sacct", show_default=True, type=click.Choice(["sacct", "pbs", "lsf", "sge"]),
              help="The accounting file: sacct text, PBS daily logs (accounting/YYYYMMDD), LSF lsb.acct or Grid "
                   "Engine accounting; the same jobs and truth in each.")
def generate(out, jobs, days, cluster_spec, profile, seed, corrupt, telemetry_interval_s, no_telemetry, fmt) -> None:
    """Write a synthetic month in real export formats, with its planted ground truth (truth.json)."""
    from .synthetic import generate as run_generate

    try:
        written = run_generate(out, jobs=jobs, days=days, cluster_spec=cluster_spec, profile=profile, seed=seed,
                               corrupt=corrupt, telemetry_interval_s=telemetry_interval_s,
                               write_telemetry=not no_telemetry, fmt=fmt)
    except (InputError, ValueError) as exc:
        _fail(exc)
    for path in written:
        click.echo(str(path))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--policy", default="easy", show_default=True,
              type=click.Choice(["fifo", "easy", "conservative", "fairshare", "budget"]))
@click.option("--procs", default=None, type=click.IntRange(min=1),
              help="One pool of P processors (SWF traces; default: the SWF header's MaxProcs); otherwise the "
                   "cluster shape's nodes.")
@click.option("--cluster-shape", default=None, type=click.Path(path_type=Path, exists=True),
              help="Cluster shape TOML (default: one found among the inputs or in the store).")
@click.option("--out", default=None, type=click.Path(path_type=Path), help="Write DIR/replay/jobs.parquet and metrics.json.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as one JSON object.")
def simulate(paths, policy, procs, cluster_shape, out, as_json) -> None:
    """Replay a trace or an ingested store on the cluster model under one scheduling policy."""
    import json

    from .pipeline import simulate as run_simulate

    try:
        m = run_simulate(paths, policy=policy, procs=procs, cluster_shape=cluster_shape, out=out)
    except (InputError, ValueError) as exc:
        _fail(exc)
    if as_json:
        click.echo(json.dumps(m, indent=2, sort_keys=True, default=str))
        return
    click.echo(f"{m['policy']}: {m['jobs']:,} jobs, mean wait {m['mean_wait_s']:,.1f} s, median "
               f"{m['median_wait_s']:,.1f} s, p95 {m['p95_wait_s']:,.1f} s, bounded slowdown "
               f"{m['mean_bounded_slowdown']:,.2f}, makespan {m['makespan_s'] / 3600:,.1f} h; dropped {m['dropped']}")


def _floats(text: str) -> tuple:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"not a comma-separated list of numbers: {text!r}") from None
    if not values or any(not 0 < v < 1 for v in values):
        raise click.BadParameter("risk levels must lie strictly between 0 and 1")
    return values


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--procs", default=None, type=click.IntRange(min=1),
              help="One pool of P processors (SWF traces: run-time right-sizing only, never killed at the limit; "
                   "default: the SWF header's MaxProcs).")
@click.option("--cluster-shape", default=None, type=click.Path(path_type=Path, exists=True),
              help="Cluster shape TOML (default: the store's, or one found among the inputs).")
@click.option("--risk", default="0.5,0.8,0.9,0.95,0.99", show_default=True,
              help="Risk levels: each job's calibrated prediction at these quantiles.")
@click.option("--mode", default="both", show_default=True, type=click.Choice(["enforce", "advise", "both"]),
              help="enforce: jobs get only the right-sized request; advise: the scheduler plans with the "
                   "predicted run time, jobs keep their own limit.")
@click.option("--predictor", default="lightgbm", show_default=True,
              type=click.Choice(["lightgbm", "last_two", "request", "habit_max", "habit_krr", "habit_vpa", "habit_autopilot"]),
              help="lightgbm: the calibrated predictions (with the site rules weighed beside it, stratum by stratum); "
                   "a rule alone: last_two (run time), habit_* (the site rules on each job's habit).")
@click.option("--backfill-order", default="fcfs", show_default=True, type=click.Choice(["fcfs", "sjf"]))
@click.option("--policy", default="easy", show_default=True, type=click.Choice(["fifo", "easy", "fairshare", "budget"]),
              help="The policy every scenario is replayed under.")
@click.option("--capacity-search/--no-capacity-search", default=True, show_default=True)
@click.option("--replicates", default=10, show_default=True, type=click.IntRange(min=0),
              help="Shaken copies of the month for the recommended level's interval.")
@click.option("--tolerance", default=0.01, show_default=True, type=click.FloatRange(min=0),
              help="Largest share of jobs killed the recommended level may cost.")
@click.option("--kill-budget", default="1%", show_default=True, callback=_share, help=KILL_BUDGET_HELP)
@click.option("--gpu-hours-budget", default="off", show_default=True, callback=_share,
              help=GPU_HOURS_BUDGET_HELP)
@click.option("--scheduler", default=None, help="Address of a running Dask scheduler (tcp://HOST:8786).")
@click.option("--serial", is_flag=True, help="Run every replay in this process, one after another.")
@click.option("--workers", default=None, type=click.IntRange(min=1), help="Local Dask workers (default: one per core).")
@click.option("--price-book", default=None, help="Price book TOML, or a shipped book's name (default cloud-on-demand).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the shaken inputs.")
@click.option("--out", default=None, type=click.Path(path_type=Path),
              help="Write DIR/whatif/ (default: the store given).")
@click.option("--json", "as_json", is_flag=True, help="Print whatif/summary.json instead of the text summary.")
@click.option("--quiet", is_flag=True, help="No stage lines or progress on stderr.")
def whatif(paths, procs, cluster_shape, risk, mode, predictor, backfill_order, policy, capacity_search, replicates,
           tolerance, kill_budget, gpu_hours_budget, scheduler, serial, workers, price_book, seed, out, as_json,
           quiet) -> None:
    """Replay the month under right-sized requests at every risk level and find the capacity to recover."""
    import json

    from .accounting import PriceBookError
    from .pipeline import whatif as run_whatif
    from .whatif import whatif_text

    if scheduler and serial:
        _fail(ValueError("--scheduler and --serial exclude each other"))
    try:
        result = run_whatif(paths, procs=procs, cluster_shape=cluster_shape, out=out, risk=_floats(risk),
                            modes=("enforce", "advise") if mode == "both" else (mode,), predictor=predictor,
                            backfill_order=backfill_order, policy=policy, capacity_search=capacity_search,
                            replicates=replicates, tolerance=tolerance, kill_budget=kill_budget,
                            gpu_hours_budget=gpu_hours_budget, seed=seed,
                            scheduler=scheduler,
                            serial=serial, workers=workers, quiet=quiet, price_book=price_book)
    except (InputError, PriceBookError, ValueError) as exc:
        _fail(exc)
    if as_json:
        click.echo(json.dumps(result.summary, indent=2, sort_keys=True))
        return
    click.echo(whatif_text(result.summary, result.folder))


@main.group()
def collect() -> None:
    """Collect a pilot's inputs with read-only commands into a tarball (docs/pilot.md)."""


def _collect(run, out, quiet: bool, **options) -> None:
    """Run a collector, print the tarball and the commands that failed (exit 4 when one did; 2 on bad options)."""
    try:
        tarball, manifest = run(out, log=None if quiet else lambda t: click.echo(t, err=True), **options)
    except ValueError as exc:
        _fail(exc)
    failed = manifest.failed
    click.echo(f"wrote {tarball} ({len(manifest.commands)} commands, {len(failed)} failed)")
    for c in failed:
        click.echo(f"reclaim: warning: {' '.join(c['argv'])} exited {c['exit_code']}: {c.get('stderr', '')[:200]}",
                   err=True)
    if failed:
        sys.exit(4)


@collect.command("slurm")
@click.option("--since", default="7d", show_default=True, help="Start: 7d, 12h, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS.")
@click.option("--until", default=None, help="End (default: now), in the cluster's local time.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Folder to write into.")
@click.option("--no-json", is_flag=True, help="Do not also export sacct --json.")
@click.option("--quiet", is_flag=True)
def collect_slurm(since, until, out, no_json, quiet) -> None:
    """sacct (by day), sinfo, scontrol show node/partition/config and sshare: read-only, into a tarball."""
    from .collect import collect_slurm

    _collect(collect_slurm, out, quiet, since=since, until=until, json_too=not no_json)


@collect.command("k8s")
@click.option("--since", default="7d", show_default=True, help="Start: 7d, 12h, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS (UTC).")
@click.option("--until", default=None, help="End (default: now), UTC.")
@click.option("--prometheus", required=True, help="Prometheus base URL (http[s]://HOST:9090).")
@click.option("--token-file", default=None, type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="File holding a bearer token for Prometheus.")
@click.option("--ca-file", default=None, type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="CA bundle to verify Prometheus' certificate.")
@click.option("--step", "step_s", default=30.0, show_default=True, type=click.FloatRange(min=1), help="Seconds between samples.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Folder to write into.")
@click.option("--quiet", is_flag=True)
def collect_k8s(since, until, prometheus, token_file, ca_file, step_s, out, quiet) -> None:
    """kubectl get pods/nodes and Prometheus query_range exports of the series the readers know, into a tarball."""
    from .collect import collect_k8s

    _collect(collect_k8s, out, quiet, prometheus=prometheus, since=since, until=until, step_s=step_s,
             token_file=token_file, ca_file=ca_file)


WINDOW_HELP = "Start: 7d, 12h, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS (the cluster's local time)."


@collect.command("pbs")
@click.option("--since", default="7d", show_default=True, help=WINDOW_HELP)
@click.option("--until", default=None, help="End (default: now), in the cluster's local time.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Folder to write into.")
@click.option("--accounting-dir", default=None, type=click.Path(path_type=Path),
              help="The server's accounting folder (default: $PBS_HOME/server_priv/accounting, PBS_HOME from the "
                   "environment, /etc/pbs.conf or Torque's /var/spool/torque).")
@click.option("--quiet", is_flag=True)
def collect_pbs(since, until, out, accounting_dir, quiet) -> None:
    """Copies of the daily accounting files, qstat -Bf, qstat -Qf and pbsnodes: read-only, into a tarball."""
    from .collect import collect_pbs

    _collect(collect_pbs, out, quiet, since=since, until=until, accounting_dir=accounting_dir)


@collect.command("lsf")
@click.option("--since", default="7d", show_default=True, help=WINDOW_HELP)
@click.option("--until", default=None, help="End (default: now), in this machine's local time.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Folder to write into.")
@click.option("--logdir", default=None, type=click.Path(path_type=Path),
              help="The folder of lsb.acct (default: LSB_SHAREDIR/<cluster>/logdir from lsf.conf and lsid).")
@click.option("--quiet", is_flag=True)
def collect_lsf(since, until, out, logdir, quiet) -> None:
    """Copies of lsb.acct and the archived lsb.acct.N of the window, lsid, lshosts, bhosts, bqueues and bmgroup."""
    from .collect import collect_lsf

    _collect(collect_lsf, out, quiet, since=since, until=until, logdir=logdir)


@collect.command("sge")
@click.option("--since", default="7d", show_default=True, help=WINDOW_HELP)
@click.option("--until", default=None, help="End (default: now), in this machine's local time.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="Folder to write into.")
@click.option("--accounting", default=None, type=click.Path(path_type=Path, dir_okay=False),
              help="The accounting file (default: $SGE_ROOT/$SGE_CELL/common/accounting).")
@click.option("--quiet", is_flag=True)
def collect_sge(since, until, out, accounting, quiet) -> None:
    """A copy of the accounting file, qhost -F, qconf -sql and qconf -sq for each queue: read-only, into a tarball."""
    from .collect import collect_sge

    _collect(collect_sge, out, quiet, since=since, until=until, accounting=accounting)


@main.command()
@click.option("--month", required=True, help="The month to audit, YYYY-MM, or 'last' for the calendar month before today.")
@click.option("--input", "inputs", multiple=True, type=click.Path(path_type=Path, exists=True),
              help="Read these inputs instead of collecting the month (repeatable).")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Folder of the monthly runs (DIR/YYYY-MM/, DIR/reclaim.duckdb, DIR/reclaim.prom).")
@click.option("--cluster-shape", default=None, type=click.Path(path_type=Path, exists=True))
@click.option("--scheduler", default="auto", show_default=True, type=_LazyChoice(["auto"], _schedulers),
              help="Whose accounting to collect (auto: the scheduler whose read-only commands are on PATH).")
@click.option("--price-book", default=None, help="Price book TOML, or a shipped book's name (default cloud-on-demand).")
@click.option("--whatif/--no-whatif", default=True, show_default=True)
@click.option("--advisor-model/--no-advisor-model", default=True, show_default=True,
              help="Fit and save the submit-time advisor's model in DIR/YYYY-MM/model.")
@click.option("--serial", is_flag=True, help="What-if replays in this process.")
@click.option("--kill-budget", default="1%", show_default=True, callback=_share, help=KILL_BUDGET_HELP)
@click.option("--gpu-hours-budget", default="off", show_default=True, callback=_share,
              help=GPU_HOURS_BUDGET_HELP)
@click.option("--wait", "wait_s", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds to wait for another monthly run to finish before giving up (exit 75).")
@click.option("--config", "config_path", default=None, type=click.Path(path_type=Path),
              help="Report config TOML (client, branding, price book, risk, thresholds, pages, anonymisation).")
@click.option("--quiet", is_flag=True, help="No stage lines or progress on stderr.")
def monthly(month, inputs, out, cluster_shape, scheduler, price_book, whatif, advisor_model, serial, kill_budget,
            gpu_hours_budget, wait_s, config_path, quiet) -> None:
    """Audit one month (collected, or from --input) into DIR/YYYY-MM/ with a summary, trends and metrics.

    Exit codes: 0 published; 2 bad input or option; 4 the collection had failed commands (nothing
    published); 75 another monthly run holds the lock (try again later)."""
    from .accounting import PriceBookError
    from .config import load_config
    from .monthly import Busy
    from .pipeline import EXIT_BUSY, EXIT_PARTIAL, PartialCollection
    from .pipeline import monthly as run_monthly
    from .progress import Progress

    try:
        config = load_config(config_path)
        result = run_monthly(month, out, inputs=list(inputs) or None, cluster_shape=cluster_shape,
                             scheduler=scheduler, price_book=price_book, whatif=whatif, advisor_model=advisor_model, wait_s=wait_s,
                             whatif_options={"serial": serial, "quiet": quiet, "kill_budget": kill_budget,
                                             "gpu_hours_budget": gpu_hours_budget},
                             log=None if quiet else lambda text: click.echo(text, err=True), config=config,
                             progress=Progress(quiet=quiet))
    except Busy as exc:
        click.echo(f"reclaim: {exc}", err=True)
        sys.exit(EXIT_BUSY)
    except PartialCollection as exc:
        click.echo(f"reclaim: error: {exc}", err=True)
        sys.exit(EXIT_PARTIAL)
    except (InputError, PriceBookError, ValueError) as exc:
        _fail(exc)
    click.echo(f"published {result.folder} ({result.folder / 'summary.md'})")


if __name__ == "__main__":  # pragma: no cover
    main()
