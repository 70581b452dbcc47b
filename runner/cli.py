"""The ``pcskm`` command line: run experiments, inspect and report cubes, manage data."""

import argparse
import errno
import gc
import logging
import math
import os
import shlex
import signal
import sys
import tempfile
from pathlib import Path

from .locations import is_url, store_path

log = logging.getLogger("pcskm")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_SPEC = "quick"
CLUSTBENCH = "clustbench:"  # `pcskm datasets list clustbench:BATTERY`


def default_store(spec_name):
    return Path("results") / f"{spec_name}.zarr"


# Options of `pcskm run` that a resume leaves out: a forced run cleared its done markers when
# it began, so that its resume computes only what is left; a dry run computes nothing.
# A run that took over a store (--take-over) holds it: its resume needs no take-over; a run
# that reset the branch to a tag (--from-tag) resumes from where it stopped.
NOT_RESUMED = ("force", "dry_run", "calibration_seconds", "recalibrate", "take_over",
               "from_tag")
# A run estimated under two minutes is mostly its fixed start, which the machine's load
# stretches: the smoke and quick specs' whole runs took SMALL_RUN_RANGE times their estimate
# at the load averages of SMALL_RUN_LOADS on 2 cores (docs/guide/paper-study.md, Small specs)
SMALL_RUN_SECONDS, SMALL_RUN_RANGE, SMALL_RUN_LOADS = 120.0, (0.9, 3.7), (2, 10)


def _described(error):
    """The message of ``error``, or what it is when it has none: distributed's time-outs
    (``TimeoutError()``) carry no text."""
    if str(error):
        return str(error)
    if isinstance(error, TimeoutError):
        return ("the Dask cluster did not answer in time (TimeoutError): its scheduler or "
                "workers may be overloaded or gone")
    return f"{type(error).__name__} with no message"


def _given(parser, args):
    """The command-line words of every option of ``parser`` that ``args`` sets to other than
    its default (positionals as their values), read from the parser, so that every option
    is covered, new ones included."""
    words = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.dest in NOT_RESUMED:
            continue
        value = getattr(args, action.dest, action.default)
        if value is None or value is False or (value == action.default
                                                and action.option_strings):
            continue
        if not action.option_strings:
            words.append(str(value))
            continue
        flag = next((o for o in action.option_strings if o.startswith("--")),
                    action.option_strings[0])
        if action.nargs == 0:
            words.append(flag)
        else:
            for item in (value if isinstance(value, list) else [value]):
                words += [flag, str(item)]
    return words


def _resume_command(args, store):
    """The command that resumes this run: ``pcskm run`` with the options it was given (where
    and how to compute included: ``--scheduler``, ``--cluster``, ``--workers``, ``--jobs``,
    ...) but :data:`NOT_RESUMED`, and ``--store``; quoted for a POSIX shell (``|`` in
    ``--only`` would otherwise start a pipe)."""
    parser = build_parser()
    run = next(a for a in parser._actions
               if isinstance(a, argparse._SubParsersAction)).choices["run"]
    options = _given(run, argparse.Namespace(**{**vars(args), "store": None}))
    return shlex.join(["pcskm", *_given(parser, args), "run", options[0], "--store",
                       str(store), *options[1:]])


def _cluster_options(args):
    return {"scheduler": args.scheduler, "cluster": args.cluster, "workers": args.workers,
            "jobs": args.jobs, "minimum_jobs": args.minimum_jobs,
            "maximum_jobs": args.maximum_jobs}


def _dry_run(args, spec, store, selection):
    from .calibrate import (
        Kept,
        RunTime,
        WorkerStartFailed,
        cluster_start_seconds,
        estimate,
        process_age_seconds,
        worker_start_seconds,
    )
    from .clusters import is_local, machine_cores
    from .compiling import compile_kernels, watch_compiling
    from .progress import duration
    from .store import (
        WRITE_SECONDS_PER_MIB,
        WRITE_SECONDS_PER_TASK,
        CubeView,
        available_memory,
        binary,
        disk_space,
        store_sizes,
        where,
        write_seconds,
        written_bytes,
    )
    from .wall_time import job_wall_seconds, plan_for_jobs, sized_plan

    process = process_age_seconds()
    view = CubeView.planned(store, spec, args.data_dir)
    options = _cluster_options(args)
    plan_options = {"selection": selection, "force": args.force, "data_dir": args.data_dir,
                    "recompute_changed": args.recompute_changed}
    # the calibration below times the user estimators' cells too
    the_plan = plan_for_jobs(spec, view, options, args.preload, say=False,
                             time_user_cells=False, **plan_options)
    location = where(store)
    print(f"spec {spec.name} (hash {spec.hash()[:12]}), store {store}"
          f"{' (new)' if location.is_new() else ''}")
    print(f"cells: {the_plan.n_cells_total} {the_plan.scope()}, {the_plan.n_cells_done} done, "
          f"{the_plan.n_cells} to compute ({the_plan.n_fits} fits) in {len(the_plan.tasks)} "
          "tasks")
    if args.recompute_changed:
        print(f"of them, {the_plan.n_cells_changed} done cells computed by code other than "
              "the current one")
    space = disk_space(location)  # None: object storage
    disk = "" if space is None else f"{binary(space[1])} free in {space[0]}, "
    print(f"{store_sizes(view.layout).describe()}; {disk}"
          f"{binary(available_memory())} of memory available")
    if not the_plan.tasks:
        return EXIT_OK
    kept = Kept(args.preload or (), fresh=args.recalibrate)
    # The kernels are loaded (or compiled) before the probes, which would else compile inside
    # the time budget; when every probe is reused there is none, and the time it took to load
    # them is kept too: a dry run repeated on this machine and code times nothing.
    loaded = {}

    def load_kernels():
        with watch_compiling(lambda: None) as compiling:
            loaded["seconds"] = compile_kernels(the_plan.tasks)
        loaded["compiled"] = compiling.n_compiled > 0
        if not loaded["compiled"]:
            kept.add_start("kernels", loaded["seconds"])

    workers = args.workers or (args.jobs or 0) or machine_cores()
    result = estimate(the_plan.tasks, view, spec, budget_seconds=args.calibration_seconds,
                      kept=kept, workers=workers, before_probes=load_kernels)
    if not loaded and kept.start("kernels") is None:
        load_kernels()
    kernels, compiled = loaded.get("seconds", kept.start("kernels")), loaded.get("compiled")
    start, failed = kept.start("worker"), None
    worker_when = "by an earlier dry run" if start is not None else "now"
    if start is None:
        try:
            start = worker_start_seconds(the_plan.tasks, args.preload or ())
        except WorkerStartFailed as error:  # the estimate goes on without it, and says so
            start, failed = 0.0, str(error)
        else:
            kept.add_start("worker", start)
    if compiled:  # the run's client loads them from the cache, as a new worker
        kernels = start
    # at most one process per core: `--workers N` may stand for the workers of a cluster
    # (docs/guide/hpc.md), and a dry run never starts more than this machine runs at once
    cluster = 0.0
    if is_local(**options):
        n_local = min(workers, machine_cores())
        cluster = kept.start(f"cluster {n_local}")
        if cluster is None:
            cluster = cluster_start_seconds(n_local)
            kept.add_start(f"cluster {n_local}", cluster)
    kept.save()
    print(f"calibration: {result.n_probes - result.n_kept} of {result.n_groups} task groups "
          f"timed in {result.probe_seconds:.1f} s on this machine"
          + (f", {result.n_kept} kept from an earlier dry run on this machine and code "
             f"version ({kept.path}; --recalibrate times them again)" if result.n_kept else ""))
    if result.n_probes < result.n_groups and result.core_seconds > 0:
        print(f"calibration: the {result.n_groups - result.n_probes} groups not timed are "
              f"priced from the timed ones, {result.extrapolated_seconds / result.core_seconds:.0%}"
              " of the estimated compute: a larger --calibration-seconds times more of them")
    print(f"estimated compute: {duration(result.core_seconds)} on one core "
          f"({result.core_seconds / 3600:.2f} core-hours)")
    wall = job_wall_seconds(options)
    if wall is not None:  # by the calibration just kept: what the run will plan
        print(sized_plan(spec, view, wall, kept, **plan_options).largest())
    # Calibrated compute over (workers x run time): 0.92, the mean of the six runs on 2 local
    # workers on 2 cores, each from an empty store just after its dry run, since the
    # calibration times whole tasks (docs/guide/paper-study.md, Estimating): 0.81 to 0.98 on
    # specs with and without selection scores, on two VMs; at 0.92 every estimate but one
    # (12 % short) is within 6 %. Below 1 because the workers take more CPU than the
    # calibration counts (two workers computing side by side on the two cores, and the VM's
    # speed moving during a run, are likely causes, not separated), and the client takes
    # its share of the cores. Remote workers do not share their cores with the client, so
    # there the estimate errs on the long side.
    ratio = 0.92
    writing = write_seconds(view, the_plan.tasks)
    timed = RunTime(process=process, kernels=kernels, cluster=cluster, worker=start,
                    compute=result.core_seconds / workers / ratio, writing=writing / workers)
    if failed is None:
        print(f"estimated start of a worker: {duration(start)} before its first result (a "
              f"fresh process importing pcskm and loading the kernels, timed {worker_when}; "
              "not in the compute)")
    else:
        print(f"estimated start of a worker: not timed, a fresh process failed ({failed}); "
              "the run time below leaves it out")
    print(f"estimated start of the run: {duration(timed.fixed)} before the workers compute "
          f"(pcskm's start {duration(process)}, the client's kernels {duration(kernels)}, "
          + (f"the local cluster {duration(cluster)}, " if is_local(**options) else
             "the cluster's start not timed, ")
          + f"a worker's start {duration(start)})")
    print(f"estimated writing: {duration(writing)} in all, by the workers, each its tasks' "
          f"chunks ({len(the_plan.tasks)} tasks at {WRITE_SECONDS_PER_TASK} s and "
          f"{binary(written_bytes(view, the_plan.tasks))} of chunks, uncompressed, at "
          f"{WRITE_SECONDS_PER_MIB} s per MiB): {duration(timed.writing)} on {workers} "
          "workers; the client only marks done")
    print(f"estimated run time on {workers} workers: {duration(timed.seconds)}: the start and "
          f"{duration(timed.compute + timed.writing)} of compute and writing (calibrated "
          f"compute / worker time = {ratio:.2f}, measured on paper runs)")
    if timed.seconds < SMALL_RUN_SECONDS:
        low, high = SMALL_RUN_RANGE
        print(f"a short run, mostly its start: expect {duration(low * timed.seconds)} to "
              f"{duration(high * timed.seconds)} ({low} to {high} times the estimate, as "
              f"measured on small specs at load averages {SMALL_RUN_LOADS[0]} to "
              f"{SMALL_RUN_LOADS[1]} on 2 cores; the load average is "
              f"{os.getloadavg()[0]:.1f} on {machine_cores()} cores now; "
              "docs/guide/paper-study.md, Small specs)")
    return EXIT_OK


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_run(args):
    from .tasks import check_selection, parse_only

    spec = _read_spec(args)
    store = args.store or default_store(spec.name)
    selection = parse_only(args.only)
    check_selection(spec, selection)  # before anything is created or loaded
    if args.dry_run:
        return _dry_run(args, spec, store, selection)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return _run(args, spec, store, selection)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args, spec, store, selection):
    """``pcskm run`` once its arguments are read, SIGTERM raising KeyboardInterrupt."""
    from pcskm.experiments import DataNotFoundError

    from .execute import ClusterStartError, check_committed, run_spec
    from .store import IncompatibleStore

    resume = _resume_command(args, store)
    check_committed(spec, args.allow_uncommitted)
    try:
        summary = run_spec(spec, store, cluster_options=_cluster_options(args),
                           selection=selection, force=args.force,
                           data_dir=args.data_dir, progress=not args.no_progress,
                           reuse_from=args.reuse_from, preload=args.preload or (),
                           worker_timeout=(None if args.worker_timeout is None else
                                           args.worker_timeout or math.inf),
                           take_over=args.take_over, from_tag=args.from_tag,
                           recompute_changed=args.recompute_changed,
                           task_timeout=args.task_timeout)
    except DataNotFoundError:
        raise  # a usage error (fetch the data), not a failed run: main() reports it
    except IncompatibleStore as error:
        log.error("%s", error)
        return EXIT_USAGE
    except ClusterStartError as error:
        log.error("%s. Rerun: %s", error, resume)
        return EXIT_USAGE
    except KeyboardInterrupt:
        log.warning("interrupted; the store keeps every finished cell. Resume with: %s",
                    resume)
        return EXIT_INTERRUPTED
    except OSError as error:  # ConnectionError, distributed's CommClosedError, ...
        if error.errno == errno.ENOSPC:
            log.error("no space left on the disk holding %s (the file system mounted at "
                      "%s)%s. The cells marked done are kept; free space there and resume "
                      "with: %s", store, _mount_point(store),
                      f" while writing {error.filename}" if error.filename else "", resume)
            return EXIT_USAGE
        log.error("%s\nThe store keeps every finished cell. Resume with: %s",
                  _described(error), resume)
        return EXIT_FAILED
    if summary is None:
        return EXIT_OK
    log.info("%s", summary.describe())
    if summary.interrupted:
        log.warning("interrupted; the store keeps every finished cell. Resume with: %s",
                    resume)
        return EXIT_INTERRUPTED
    if summary.errors:
        log.error("%d tasks failed (first: %s: %s); their cells stay missing. Rerun to retry: "
                  "%s", len(summary.errors), *summary.errors[0], resume)
        return EXIT_FAILED
    log.info("complete: %s. Open it with pcskm.runner.open_cube(%r)%s", store, str(store),
             "" if is_url(str(store)) else
             f" or xarray.open_datatree({str(store)!r}, engine='zarr')")
    return EXIT_OK


def _mount_point(store):
    """The mount point of the file system holding the folder ``store``."""
    folder = Path(store).resolve()
    while not os.path.ismount(folder):
        folder = folder.parent
    return folder


def cmd_compile(args):
    """Fill the Numba cache with the kernels of a spec's cells, once (docs/guide/hpc.md)."""
    from pcskm.algorithms._jit import cache_dir

    from .compiling import compile_kernels
    from .store import CubeView
    from .tasks import check_selection, parse_only, plan

    spec = _read_spec(args)
    selection = parse_only(args.only)
    check_selection(spec, selection)
    with tempfile.TemporaryDirectory() as folder:  # every cell missing: a store never made
        view = CubeView.planned(Path(folder) / "never.zarr", spec, args.data_dir)
        the_plan = plan(spec, view, selection=selection, data_dir=args.data_dir)
    compile_kernels(the_plan.tasks)
    print(f"the kernels of {spec.name} are in the Numba cache "
          f"{os.environ.get('NUMBA_CACHE_DIR') or cache_dir()}; workers of this installation "
          "and CPU type whose NUMBA_CACHE_DIR is that folder load them from it")
    return EXIT_OK


def cmd_status(args):
    store = _existing_store(args.store)
    if store is None:
        return EXIT_USAGE
    from .store import DamagedStore, IncompatibleStore, check_store
    from .summary import status_text

    check_store(store)
    if args.verify:
        from .store import verify

        found = verify(store)
    else:
        found = None
    try:
        text = status_text(store, found)
    except IncompatibleStore:
        raise
    except (ValueError, RuntimeError) as error:  # e.g. a chunk failing its checksum or decoding
        if found is None:
            from .store import verify

            verify(store)  # names a damaged coordinate chunk
        raise DamagedStore(f"cannot read {store} ({error}); if a chunk is damaged, pcskm "
                           "verify names it") from None
    print(text)
    if found is not None:
        print(found.describe())
        return EXIT_OK if found.ok else EXIT_FAILED
    return EXIT_OK


def cmd_verify(args):
    from .store import verify

    found = verify(args.store if is_url(args.store) else Path(args.store))
    print(found.describe())
    return EXIT_OK if found.ok else EXIT_FAILED


def _existing_store(text):
    """The store ``text`` names (a path, or an ``s3://`` URL), or None after saying that
    there is none (a path checked before the imports: an answer at once)."""
    if not is_url(text):
        if not Path(text).exists():
            if Path(text).is_symlink():  # to nothing, or a loop: where() says which
                from .store import where

                where(text)
            log.error("no store at %s", text)
            return None
        return Path(text)
    from .store import where

    location = where(text)
    if location.is_new():
        log.error("no store at %s", text)
        return None
    return location


def cmd_report(args):
    store = _existing_store(args.store)
    if store is None:
        return EXIT_USAGE
    from pcskm.experiments.report import PARTIAL, write_report
    from pcskm.experiments.report.plotting import FigureNotWritten

    # default: <store stem>-report beside a folder, in the working folder for a URL
    name = Path(store.name).stem + "-report"
    out_dir = Path(args.out) if args.out else (Path(name) if is_url(args.store)
                                               else store.with_name(name))
    try:
        write_report(store, out_dir, focus=args.focus, baseline=args.baseline,
                     grids=args.grids)
    except (OSError, FigureNotWritten) as error:  # a full disk, a figure a child could not write
        if args.debug or not (out_dir / PARTIAL).exists():
            raise  # nothing was written: main() reports it
        log.error("%s; the report in %s is incomplete (its file %s says so): write it again",
                  error, out_dir, PARTIAL)
        return EXIT_FAILED
    log.info("report written to %s", out_dir)
    return EXIT_OK


def cmd_check(args):
    from pcskm.experiments.check import (
        CELL_COLUMNS,
        CODE,
        available,
        code_notes,
        read_table,
        recompute,
    )

    spec = _read_spec(args)
    table = read_table(args.table)
    if args.cells is not None:  # a seeded random subset of the listed cells
        unique = table[list(CELL_COLUMNS)].drop_duplicates()
        chosen = unique.sample(n=min(args.cells, len(unique)), random_state=args.seed)
        table = table.merge(chosen, how="inner")
    table, skipped = available(spec, table, data_dir=args.data_dir)
    for name, (n_cells, reason) in skipped.items():
        log.warning("%s: %d cells not checked, its data is missing: %s", name, n_cells, reason)
    if table.empty:
        log.error("no cell checked: the data of every listed data set is missing (%s)",
                  ", ".join(skipped))
        return EXIT_USAGE
    checked = recompute(spec, table, data_dir=args.data_dir)
    n_cells = len(checked.drop_duplicates(list(CELL_COLUMNS)))
    wrong = checked[~checked.agrees]
    not_checked = (f"; not checked: {sum(n for n, _ in skipped.values())} cells of "
                   f"{', '.join(skipped)} (data missing)" if skipped else "")
    if len(wrong):
        print(wrong.drop(columns=[c for c in CODE if c in wrong]).to_string(index=False))
        for line in code_notes(spec, wrong):
            log.error("%s", line)
        log.error("%d of %d values (%d cells) differ from their recomputation%s",
                  len(wrong), len(checked), n_cells, not_checked)
        return EXIT_FAILED
    print(f"{n_cells} cells, {len(checked)} rows: every recorded value equals its "
          f"recomputation (floats to a relative 1e-6, the cube's float32){not_checked}")
    return EXIT_OK


def cmd_datasets(args):
    from pcskm.experiments import DataNotFoundError, datasets

    if args.action == "list" and args.spec and args.spec.startswith(CLUSTBENCH):
        from pcskm.experiments import sources

        print(sources.format_battery_table(args.spec[len(CLUSTBENCH):], args.n_folds,
                                           args.data_dir))
        return EXIT_OK
    if args.action == "list" and args.spec:
        from pcskm.experiments import sources

        print(sources.format_spec_table(_read_spec(args), args.data_dir))
        return EXIT_OK
    if args.action == "list":
        print(datasets.format_dataset_table(args.data_dir))
        return EXIT_OK
    if args.action == "fetch":
        try:
            outcome = datasets.fetch(args.names or None, args.data_dir)
        except DataNotFoundError as error:  # the download failed: the command's outcome
            log.error("%s", error)
            return EXIT_FAILED
        for relpath, state in outcome.items():
            print(f"{state:10}  {relpath}")
        return EXIT_OK
    outcome = datasets.verify(args.data_dir)
    for relpath, state in outcome.items():
        print(f"{state:8}  {relpath}")
    return EXIT_OK if all(state in ("ok", "missing") for state in outcome.values()) \
        else EXIT_FAILED


def _worker_count(text):
    """A number of worker processes or jobs: a whole number, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text):
    """A duration in seconds: a number, at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text}")
    return value


def _preload_option(parser, shipped=""):
    """``--preload FILE.py``, as ``pcskm run`` takes it, for every command that reads a spec
    naming a user estimator or loader of a single module file (docs/guide/hpc.md)."""
    parser.add_argument("--preload", action="append", metavar="FILE.py",
                        help="a Python module of a user estimator or data loader (the spec "
                             f"names it \"FILE:Name\"), imported here{shipped}; repeatable")


def _read_spec(args):
    """The spec ``args.spec``, after importing the ``--preload`` files it may name."""
    from pcskm.experiments.spec import load_spec

    from .preload import import_files

    import_files(args.preload or ())
    return load_spec(args.spec)


def _version():
    from importlib import metadata

    return metadata.version("pcskm")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="pcskm", description="Run the PCSKM study on Dask and inspect its results cube.")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (else one line)")
    parser.add_argument("--version", action="version", version=f"pcskm {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="compute the missing cells of a spec into its Zarr store",
        description="Compute every missing cell of SPEC and write it to the store as tasks "
                    "finish. Rerunning the same command resumes an interrupted run.")
    run.add_argument("spec", nargs="?", default=DEFAULT_SPEC,
                     help="bundled spec (smoke, quick, paper, unpaired, paired-subset, "
                          "contamination, extended, confirmatory, confirmatory-raw, "
                          "confirmatory-sparsity) or a TOML file (default: quick)")
    run.add_argument("--store", type=store_path,
                     help="Zarr store: a folder, or s3://bucket/prefix for an Icechunk "
                          "repository on object storage (default: results/<spec name>.zarr)")
    run.add_argument("--data-dir", help="folder of the paper's data files (else $PCSKM_DATA, "
                                        "else the user cache)")
    run.add_argument("--only", help="restrict to a selection: key=pattern[|pattern],... with "
                                    "keys dataset, algorithm, init, kind, percent")
    run.add_argument("--force", action="store_true",
                     help="recompute the selected cells even if done")
    run.add_argument("--allow-uncommitted", action="store_true",
                     help="run a spec with a [preregistration] although the package has "
                          "uncommitted changes (refused otherwise); the run records the "
                          "diff's SHA-256")
    run.add_argument("--recompute-changed", action="store_true",
                     help="also recompute the done cells whose code (a user estimator's "
                          "module or version, as the run that computed them recorded it) "
                          "differs from the current one; pcskm status lists the codes")
    run.add_argument("--from", dest="reuse_from", metavar="STORE", type=store_path,
                     help="copy the cells this spec shares with another store (one made with "
                          "the same seed, design, folds, max_iter, s grids, data and algorithm "
                          "parameters) instead of computing them")
    run.add_argument("--take-over", action="store_true",
                     help="on object storage (s3://): write the store although the note of "
                          "a run of another host, killed, says that run writes it (if it "
                          "is alive, its next commit is refused and it stops)")
    run.add_argument("--from-tag", metavar="TAG",
                     help="on object storage (s3://): first reset the store's branch to the "
                          "version of the run tag TAG (run-NNNN, pcskm status lists them), "
                          "then compute what it lacks; the way back from a damaged snapshot "
                          "or branch ref, which pcskm names with the readable tags")
    run.add_argument("--dry-run", action="store_true",
                     help="print cells, tasks and an estimated run time; compute nothing")
    run.add_argument("--calibration-seconds", type=float, default=60.0,
                     help="time budget of the --dry-run calibration (default 60)")
    run.add_argument("--recalibrate", action="store_true",
                     help="--dry-run: time every task group and start afresh, not reusing the "
                          "calibration kept for this machine and code version")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    _preload_option(run, " and shipped to every Dask worker before any task")
    where = run.add_argument_group("where to compute (default: a local cluster)")
    where.add_argument("--workers", type=_worker_count,
                       help="worker processes of the local cluster (default: one per core)")
    where.add_argument("--scheduler", help="address of a running Dask scheduler")
    where.add_argument("--cluster", choices=("slurm", "pbs", "sge", "lsf", "htcondor"),
                       help="submit workers as batch jobs with dask-jobqueue (configured in "
                            "~/.config/dask/jobqueue.yaml)")
    where.add_argument("--jobs", type=_worker_count,
                       help="number of worker jobs (lost jobs replaced)")
    where.add_argument("--minimum-jobs", type=int, help="adaptive: fewest worker jobs")
    where.add_argument("--maximum-jobs", type=int, help="adaptive: most worker jobs")
    where.add_argument("--worker-timeout", type=_seconds, metavar="SECONDS",
                       help="stop (with the command that resumes the run) when no worker has "
                            "been connected for this long; 0: never (default 600, never with "
                            "--cluster: batch jobs may be queued for hours)")
    where.add_argument("--task-timeout", type=_seconds, metavar="SECONDS",
                       help="end a task that has run this long (its worker restarted, its "
                            "cells left missing; the run ends non-zero naming it); 0: no "
                            "limit (default: the spec's [run] task_timeout, else none)")
    run.set_defaults(func=cmd_run)

    compile_ = commands.add_parser(
        "compile", help="compile the Numba kernels of a spec into the cache, once",
        description="Compile (or find in Numba's cache) every kernel the cells of SPEC use, "
                    "as pcskm run does before it starts a local cluster. For workers started "
                    "outside pcskm (--scheduler, --cluster): run it once with NUMBA_CACHE_DIR "
                    "set to a folder the workers see, on a machine of their CPU type.")
    compile_.add_argument("spec", nargs="?", default=DEFAULT_SPEC,
                          help="bundled spec or TOML file (default: quick)")
    compile_.add_argument("--only", help="restrict to a selection, as in pcskm run")
    compile_.add_argument("--data-dir", help="data folder (else $PCSKM_DATA, else the user "
                                             "cache)")
    _preload_option(compile_)
    compile_.set_defaults(func=cmd_compile)

    store_help = (f"the Zarr store: a folder or s3://bucket/prefix (default: "
                  f"{default_store(DEFAULT_SPEC)})")
    status = commands.add_parser(
        "status", help="cells done and missing in a store",
        description="Count the cells and fits of STORE per data set and algorithm: done and "
                    "missing in the whole spec, and in each selection (--only) run into it. "
                    "Reads only the done markers (and, with --verify, every chunk).")
    status.add_argument("store", nargs="?", default=str(default_store(DEFAULT_SPEC)),
                        type=store_path, help=store_help)
    status.add_argument("--verify", action="store_true",
                        help="also check every chunk (as pcskm verify) and count the cells of "
                             "damaged chunks as missing")
    status.set_defaults(func=cmd_status)

    verify = commands.add_parser(
        "verify", help="find missing, truncated and corrupted chunks in a store",
        description="Check every chunk of STORE that cells marked done rely on: present, "
                    "CRC32C checksum intact (stores made before checksums: decodable), no "
                    "fit missing. Names each damaged chunk; exit code 1 if any. pcskm run "
                    "on the store recomputes their cells. Changed metadata (zarr.json against "
                    "its recorded digest) or damaged coordinates: exit code 2, naming the "
                    "file. Reads only.")
    verify.add_argument("store", nargs="?", default=str(default_store(DEFAULT_SPEC)),
                        type=store_path, help=store_help)
    verify.set_defaults(func=cmd_verify)

    report = commands.add_parser(
        "report", help="tables and figures from a store",
        description="Write the report of STORE (report.md, every table as CSV, the figures "
                    "as PNG) into a folder.")
    report.add_argument("store", nargs="?", default=str(default_store(DEFAULT_SPEC)),
                        type=store_path, help=store_help)
    report.add_argument("--out", help="output folder (default: <store>-report)")
    report.add_argument("--focus", help="the algorithm Analysis 1 compares with every other "
                                        "one (default: the spec's [report] focus, else PCSKM)")
    report.add_argument("--baseline", metavar="FOLDER",
                        help="a report folder (e.g. docs/results/extended) computed with the "
                             "same protocol: its algorithms that STORE has not computed are "
                             "compared with STORE's")
    report.add_argument("--grids", choices=("primary", "all"), default="primary",
                        help="the performance grids drawn: those of the primary selection "
                             "(default) or of every main selection; every grid's values are "
                             "written as CSV either way")
    report.set_defaults(func=cmd_report)

    check = commands.add_parser(
        "check", help="recompute the cells listed in a table and compare",
        description="Recompute every cell listed in TABLE (the columns of a report's "
                    "cells_sample.csv) from SPEC and the data files, and compare with the "
                    "values the table records. The cells of a data set whose files are "
                    "missing are listed and not checked. Exit code 1 if any value differs, "
                    "2 if no cell could be checked.")
    check.add_argument("spec", help="the spec the cells were computed with (paper, ...)")
    check.add_argument("table", help="CSV file, e.g. docs/results/paper/cells_sample.csv")
    check.add_argument("--cells", type=int, help="check only this many of the listed cells, "
                                                 "drawn at random")
    check.add_argument("--seed", type=int, default=0, help="seed of the --cells draw")
    check.add_argument("--data-dir", help="data folder (else $PCSKM_DATA, else the user cache)")
    _preload_option(check)
    check.set_defaults(func=cmd_check)

    data_dir_help = "data folder (else $PCSKM_DATA, else the user cache)"
    data = commands.add_parser("datasets", help="list, fetch or verify the data files")
    data.add_argument("--data-dir", help=data_dir_help)
    actions = data.add_subparsers(dest="action", required=True)
    for action, text in (("list", "every data set, and whether its files are here"),
                         ("fetch", "download the paper's files and check their SHA-256"),
                         ("verify", "check the SHA-256 of the files present")):
        sub = actions.add_parser(action, help=text, description=text[0].upper() + text[1:])
        if action == "fetch":
            sub.add_argument("names", nargs="*",
                             help="data set names or patterns (default: every data set)")
        if action == "list":
            sub.add_argument("spec", nargs="?",
                             help="a spec: list its [data.NAME] data sets instead, read and "
                                  "checked; clustbench:BATTERY: the sets of a battery of the "
                                  "clustering benchmark suite")
            sub.add_argument("--n-folds", type=_worker_count, default=10,
                             help="with clustbench:BATTERY, whether each set can be split into "
                                  "this many stratified folds (default 10, the paper's)")
            _preload_option(sub)
        # also after the action; SUPPRESS keeps a --data-dir given before it
        sub.add_argument("--data-dir", default=argparse.SUPPRESS, help=data_dir_help)
    data.set_defaults(func=cmd_datasets)
    return parser


def _stdout_closed():
    """The reader of stdout went away (``pcskm datasets list | head``): send the rest of the
    output, and the final flush, to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv=None):
    """Run a command; returns its exit code. An expected failure (bad input, a missing file
    or store, an interrupt) is one line on stderr and exit code 2 (1 where a command reports
    a failed outcome itself, 130 on interrupt), with a traceback only under ``--debug``.
    The ``pcskm`` logger writes to stderr during the call and is set back as it was after it
    (``main`` may be called from Python)."""
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("pcskm: %(message)s"))
    handlers, level, propagate = log.handlers, log.level, log.propagate
    log.handlers = [handler]
    log.setLevel(logging.WARNING if args.quiet else logging.INFO)
    log.propagate = False
    try:
        return _run_command(args)
    finally:
        log.handlers, log.propagate = handlers, propagate
        log.setLevel(level)


def _run_command(args):
    """``args.func(args)``, its expected failures turned into an exit code (see ``main``)."""
    try:
        return args.func(args)
    except BrokenPipeError:
        _stdout_closed()  # as other tools do under `| head`: no message
        return EXIT_FAILED
    except KeyboardInterrupt:
        if args.debug:
            raise
        log.warning("interrupted")
        return EXIT_INTERRUPTED
    except (ValueError, OSError) as error:  # bad spec, --only, store; missing data, file
        if args.debug:
            raise
        log.error("%s", error)
        return EXIT_USAGE


def command():
    """The ``pcskm`` command: :func:`main` on the command line's arguments, whose exit code
    it returns. The objects left are then frozen out of the garbage collector
    (:func:`gc.freeze`): the interpreter's exit no longer walks them in search of cycles,
    which took 0.6 to 1.1 s after a report (the files are all written and closed by then)."""
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(command())
