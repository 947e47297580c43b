"""``kafka-analyzer check``: the rules (built-in pack, rules file, flags), the capture set, the
baseline, the outputs and the exit code. ``check --parquet DIR`` takes the capture set from the
Parquet tables of ``kafka-analyzer spark`` (:func:`analyse_tables`): the same engine, fed the
exchanges rebuilt from the tables.

Exit codes: 0 every rule holds; 1 a rule failed or the baseline regressed; 2 a usage or
configuration error; 3 inconclusive (a capture without Kafka traffic or unreadable, an aggregate
with fewer samples than its ``min_samples``) when nothing failed.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from analyzer.check import baseline, report
from analyzer.check.engine import Engine, Finding, Result
from analyzer.check.pack import BUILTIN_IDS, builtin_rules
from analyzer.check.rules import Config, ConfigError, build_rule, load, tune
from analyzer.dissect.codecs import Limits
from analyzer.dissect.message import Options
from analyzer.filter import FilterError, compile_filter, quote
from analyzer.model import Exchange
from analyzer.pipeline import Analysis

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


def config(args) -> Config:
    """The rules of this run: the built-in pack (tuned by the file's [pack]), the file's rules,
    then the flags' rules. Raises :class:`ConfigError`."""
    cfg = load(args.rules, set(BUILTIN_IDS)) if args.rules else Config()
    pack = []
    for r in builtin_rules():
        setting = cfg.pack.get(r.id, True)
        if setting is False:
            continue
        if isinstance(setting, dict):
            tune(r, setting, f"{args.rules}: [pack] {r.id}")
        pack.append(r)
    rules = pack + cfg.rules + flag_rules(args)
    ids: set[str] = set()
    for r in rules:
        if r.id in ids:
            raise ConfigError(r.source, f"id {r.id!r} is used twice")
        ids.add(r.id)
    cfg.rules = rules
    if args.fail_on:
        cfg.fail_on = {"error": cfg.fail_on.ERROR, "warning": cfg.fail_on.WARNING}[args.fail_on]
    if args.allow:
        cfg.allow = cfg.allow | {x.strip() for v in args.allow for x in v.split(",") if x.strip()}
    return cfg


def _names(values) -> list[str]:
    return [x.strip() for v in values or () for x in v.split(",") if x.strip()]


def flag_rules(args) -> list:
    """The command line's rules, each a shorthand for a rule table (one code path)."""
    out = []
    for n, text in enumerate(args.latency or (), 1):
        api, _, rest = text.partition("=")
        q, _, ms = rest.rpartition(":")
        q = (q or "p99").lower()
        fn = "max" if q == "max" else q
        if not api or not ms:
            raise ConfigError(
                f"--latency {text}", "expected API=MS or API=pNN:MS (Produce=50, Fetch=p95:600)"
            )
        try:
            float(ms)
        except ValueError:
            raise ConfigError(f"--latency {text}", f"{ms!r} is not a number of milliseconds") from None
        where = f"api == {api.strip()}"
        out.append(
            build_rule(
                {"id": f"latency-{n}", "where": where, "aggregate": f"{fn}(latency)", "max": float(ms)},
                f"--latency {text}",
            )
        )
    names = _names(args.forbid_error)
    if names:
        out.append(
            build_rule(
                {"id": "forbidden-errors", "assert": "not error in {" + ", ".join(names) + "}"},
                "--forbid-error",
            )
        )
    if args.max_kafka_errors is not None:
        out.append(
            build_rule(
                {"id": "kafka-errors", "where": "error", "aggregate": "count", "max": args.max_kafka_errors},
                "--max-kafka-errors",
            )
        )
    if args.max_unanswered is not None:
        out.append(
            build_rule(
                {"id": "unanswered", "where": "unanswered", "aggregate": "count", "max": args.max_unanswered},
                "--max-unanswered",
            )
        )
    for api in _names(args.expect_api):
        out.append(
            build_rule(
                {
                    "id": f"expect-{api}",
                    "where": f"api == {quote(api) if not api.isdigit() else api}",
                    "aggregate": "count",
                    "min": 1,
                    "message": f"{api} must occur",
                },
                f"--expect-api {api}",
            )
        )
    for n, text in enumerate(args.assert_ or (), 1):
        out.append(build_rule({"id": f"assert-{n}", "assert": text}, f"--assert {text}"))
    return out


def select(args):
    text = getattr(args, "display_filter", None)
    if not text:
        return None
    try:
        return compile_filter(text)
    except FilterError as exc:
        raise ConfigError("-Y", f"{exc.message}\n    {exc.caret(text)}") from None


def analyse_chain(args, chain: list[str], want_profile: bool) -> dict:
    """Run the rules over one chain of capture files; plain data back (for worker processes)."""
    cfg = config(args)
    sel = select(args)
    engine = Engine(cfg, sel, today=_today(args), groups=want_profile)
    prof = baseline.Profiler(sel) if want_profile else None
    records = any(r.needs_records for r in cfg.rules) or (sel is not None and sel.needs_records)
    from analyzer.capture.sets import CaptureSet

    source: str | CaptureSet = chain[0] if len(chain) == 1 else CaptureSet(chain)
    a = Analysis(
        source,
        Options(
            records_bodies=records,
            show_secrets=getattr(args, "show_secrets", False),
            limits=Limits.from_settings(args),
        ),
        ports=args.port or (),
        tls_keylog=getattr(args, "tls_keylog", None),
    )
    name = " + ".join(chain)
    engine.begin(name, a.knowledge)
    if prof is not None:
        prof.begin(name, a.knowledge)
    a.run(engine, *([prof] if prof is not None else []))
    if prof is not None:
        prof.add_groups(engine.group_rows)
        prof.add_producers(engine.producer_rows)
        prof.add_clients(engine.client_rows)
    return {"engine": engine.state(), "profile": prof.state() if prof is not None else None}


def analyse_tables(args, want_profile: bool) -> list[dict]:
    """Run the rules over the pieces of the Parquet tables in ``args.capture[0]`` (``check
    --parquet``; :mod:`analyzer.check.parquet`), each piece as :func:`analyse_chain` runs a
    chain of captures: the same engine over the same objects. Raises
    :class:`~analyzer.check.parquet.NotTables`."""
    from analyzer.check.parquet import Known, NotTables, Tables

    tables = Tables(args.capture[0], getattr(args, "set", None))
    cfg = config(args)
    sel = select(args)
    needs = [r.id for r in cfg.rules if r.needs_records]
    if sel is not None and sel.needs_records:
        needs.append("-Y")
    if needs and not tables.records_bodies():
        raise NotTables(
            f"{tables.base}: written without record bodies, which {', '.join(needs)} need"
            + (" (its findings are seen only with them)" if needs == ["kafka.invalid-batches"] else "")
            + ": write the tables with `kafka-analyzer spark --records`"
            + (", or switch the rule off" if "-Y" not in needs else "")
        )
    if not needs and any(p["records_bodies"] for p in tables.pieces):
        # check on captures decodes record bodies only when a rule reads them; these tables
        # were decoded with them, so their record-level issues are in (said, not hidden)
        print(
            f"kafka-analyzer: note: {tables.base} was written with record bodies (spark --records): "
            "the issues found in them count, as in `check` when a rule reads record bodies",
            file=sys.stderr,
        )
    out = []
    for piece in tables.pieces:
        engine = Engine(cfg, sel, today=_today(args), groups=want_profile)
        prof = baseline.Profiler(sel) if want_profile else None
        known = Known()
        name = tables.name(piece)
        engine.begin(name, known)
        if prof is not None:
            prof.begin(name, known)
        for ev, software in tables.replay(piece):
            if type(ev) is Exchange:
                known.learn(ev)
                cid = ev.client_id
                if cid is not None:
                    if software is None:
                        known.clients.pop(cid, None)
                    else:
                        known.clients[cid] = software
            engine.event(ev)
            if prof is not None:
                prof.event(ev)
        last = piece["last_ts"] if piece["packets"] else None
        engine.finish(
            piece["packets"] or 0, piece["first_ts"], last, piece["exit_code"], piece["inconclusive"]
        )
        if prof is not None:
            prof.add_groups(engine.group_rows)
            prof.add_producers(engine.producer_rows)
            prof.add_clients(engine.client_rows)
        out.append({"engine": engine.state(), "profile": prof.state() if prof is not None else None})
    if not out:
        raise NotTables(f"{tables.base}: no capture in the tables")
    return out


def _today(args) -> dt.date:
    return dt.date.fromisoformat(args.today) if getattr(args, "today", None) else dt.date.today()


def run(args, chains: list[list[str]]) -> int:
    t0 = time.monotonic()
    try:
        cfg = config(args)
        select(args)
        base = baseline.load(args.baseline) if args.baseline and not args.update_baseline else None
    except ConfigError as exc:
        print(f"kafka-analyzer: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ValueError) as exc:
        print(f"kafka-analyzer: baseline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.update_baseline and not args.baseline:
        print("kafka-analyzer: --update-baseline needs --baseline FILE", file=sys.stderr)
        return EXIT_USAGE
    want_profile = bool(args.baseline)
    if getattr(args, "parquet", False):
        from analyzer.check.parquet import NotTables

        try:
            states = analyse_tables(args, want_profile)
        except NotTables as exc:
            print(f"kafka-analyzer: {exc}", file=sys.stderr)
            return EXIT_USAGE
    else:
        jobs = max(1, getattr(args, "jobs", 1) or 1)
        if jobs > 1 and len(chains) > 1:
            with ProcessPoolExecutor(max_workers=min(jobs, len(chains))) as pool:
                states = list(
                    pool.map(analyse_chain, [args] * len(chains), chains, [want_profile] * len(chains))
                )
        else:
            states = [analyse_chain(args, chain, want_profile) for chain in chains]
    engine = Engine(cfg, None, today=_today(args))
    prof = baseline.Profiler()
    for st in states:
        engine.merge(st["engine"])
        if st["profile"] is not None:
            prof.merge(st["profile"])
    results = engine.results()
    if want_profile:
        current = prof.profile()
        if args.update_baseline:
            report.write_atomically(args.baseline, baseline.dumps(current))
            print(
                f"kafka-analyzer: baseline written to {args.baseline} ({len(current['clients'])} clients, "
                f"{len(current['groups'])} consumer groups, {len(current['producers'])} producers)",
                file=sys.stderr,
            )
        elif base is not None:
            results += baseline_results(base, current)
    inconclusive = engine.inconclusive()
    rc = exit_code(results, inconclusive)
    seconds = time.monotonic() - t0
    suite = " + ".join(c.name for c in engine.captures)
    if args.format == "json":
        sys.stdout.write(report.as_json(results, engine.captures, rc))
    elif args.format == "github":
        sys.stdout.write(report.github(results, engine.captures))
        sys.stdout.write(report.text(results, engine.captures, args.verbose))
    else:
        sys.stdout.write(report.text(results, engine.captures, args.verbose))
    if args.junit:
        report.write_atomically(args.junit, report.junit(results, engine.captures, suite, seconds))
    if args.sarif:
        report.write_atomically(args.sarif, report.sarif(results, engine.captures, rc))
    for c in engine.captures:
        if c.exit_code == EXIT_USAGE:
            print(f"kafka-analyzer: {c.name}: {c.inconclusive}", file=sys.stderr)
    return rc


def baseline_results(base: dict, current: dict) -> list[Result]:
    diffs = baseline.compare(base, current)
    by_rule: dict[str, list[baseline.Difference]] = {}
    for d in diffs:
        by_rule.setdefault(d.rule, []).append(d)
    out = []
    for rid in baseline.DIMENSIONS:
        ds = by_rule.get(rid, [])
        bad = [d for d in ds if d.severity == "error"]
        findings = [Finding(rid, d.severity, f"{d.client}: {d.message}", "(baseline)") for d in (bad or ds)]
        if bad:
            status = "failed"
            summary = f"{len(bad)} regression{'s' if len(bad) != 1 else ''}: " + "; ".join(
                f"{d.client}: {d.message}" for d in bad[:3]
            )
        elif ds:
            status, summary = "noted", "; ".join(f"{d.client}: {d.message}" for d in ds[:3])
        else:
            status, summary = "passed", "as in the baseline"
        out.append(
            Result(
                rid,
                "error",
                status,
                summary,
                findings,
                len(bad or ds),
                source="baseline",
                help=baseline.DIMENSIONS[rid],
            )
        )
    return out


def exit_code(results: list[Result], inconclusive) -> int:
    if any(r.status == "failed" for r in results):
        return EXIT_FINDINGS
    if inconclusive or any(r.status == "inconclusive" for r in results):
        return EXIT_INCONCLUSIVE
    return EXIT_OK
