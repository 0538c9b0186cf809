"""Mixed-subjects commands: `analyze --ppi-human FILE` and `simsubjects plan PILOT`.

Kept apart from cli.py so the main command file only registers them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
import math

import click

if TYPE_CHECKING:  # annotations only: pandas is imported on first use
    import pandas as pd

from simsubjects.cli.options import with_options
from simsubjects.errors import UserError
from simsubjects.cli.options import echo_table

# numpy and pandas are imported where used: `simsubjects --help` and the preload client stay light

ESTIMAND_HELP = ("mean: the human mean; difference: between the two levels of one --ppi-x column (an AMCE); "
                 "ols / logistic: coefficients on the --ppi-x columns (text columns become dummies)")


MAX_UNITS = 10**9  # --humans, --n-model, --subsample: beyond any study, and far from float overflow


def ppi_options(f):
    """The `analyze` options of prediction-powered inference (all start with --ppi-)."""
    opts = [
        click.option("--ppi-human", "ppi_human", default=None, type=click.Path(dir_okay=False),
                     help="Human data (CSV or parquet) for some of the run's units: prediction-powered "
                          "estimates beside human-only and model-only ones, written to ppi.csv."),
        click.option("--ppi-unit", default="item", show_default=True,
                     help="Column naming the unit in both the run and the human file."),
        click.option("--ppi-outcome", default="y", show_default=True,
                     help="Numeric human outcome column of the human file (several rows per unit are averaged)."),
        click.option("--ppi-response", default=None,
                     help="Model prediction = the probability of this response (e.g. Yes); default: the "
                          "numeric response, weighted."),
        click.option("--ppi-estimand", type=click.Choice(["mean", "difference", "ols", "logistic"]), default="mean",
                     show_default=True, help=ESTIMAND_HELP),
        click.option("--ppi-x", default="", help="Comma-separated covariate columns (of items.parquet or the human file)."),
        click.option("--ppi-weight", default=None,
                     help="Survey-weight column of the human file (one weight per unit)."),
        click.option("--ppi-cluster", default=None,
                     help="Cluster column (e.g. a respondent who rated several units) of the human file, and of "
                          "the run's items where they have it: cluster-robust errors."),
    ]
    return with_options(f, opts)


def read_table(path, what: str) -> pd.DataFrame:
    import pandas as pd  # lazy: off --help's path (pandas, pyarrow)

    p = Path(path)
    if not p.is_file():
        raise UserError(f"{what} {path}: no such file")
    try:
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as e:  # noqa: BLE001 - any reader error means a bad file
        raise UserError(f"{what} {path}: cannot read ({type(e).__name__}: {e})") from None


def ordinal_scores(rows: pd.DataFrame, items: pd.DataFrame | None) -> pd.DataFrame | None:
    """Per model row, its option's ordinal position (NaN for a refusal) from the items table's `labels`,
    `positions` and `refusal` (a study file's items): None when the items carry no positions."""
    if items is None or not {"item", "labels", "positions"} <= set(items.columns):
        return None
    pos = {}
    for rec in items.to_dict("records"):
        refusal = rec.get("refusal")
        refusal = list(refusal) if refusal is not None and not isinstance(refusal, float) else []
        for j, (lab, p) in enumerate(zip(list(rec["labels"]), list(rec["positions"]))):
            if not (j < len(refusal) and refusal[j]) and p == p:
                pos[(str(rec["item"]), str(lab))] = float(p)
    if not pos:
        return None
    return rows.assign(_pos=[pos.get((str(i), str(r))) for i, r in zip(rows["item"], rows["response"])])


def model_predictions(responses: pd.DataFrame, unit: str, response: str | None,
                      items: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per unit: the model's mean prediction over its trials: the probability of `response`; else
    the answer as a number; else (survey items) the expected ordinal position over the substantive
    options, the score of a study file's analyses."""
    import pandas as pd  # lazy: off --help's path (pandas, pyarrow)

    from simsubjects.analyze.tidy import prob_of, shares  # lazy: off --help's path (pandas, pyarrow)

    rows = responses[responses["source"] == "model"]
    if rows.empty:
        raise UserError("--ppi-human: the run has no model rows")
    if unit not in rows:
        raise UserError(f"--ppi-unit {unit}: not a column of the run's responses")
    if rows["model"].nunique() > 1:
        raise UserError("--ppi-human: analyze one model's run at a time (the run holds several models)")
    if response is not None:
        p = prob_of(rows, response, keep=[unit])
        col = f"p_{response}"
        if not (rows["response"] == response).any():
            raise UserError(f"--ppi-response {response}: no response of that name; the run has "
                            f"{', '.join(map(str, rows['response'].dropna().unique()[:8]))}")
    else:
        num = pd.to_numeric(rows["response"], errors="coerce")
        ordinal = ordinal_scores(rows, items) if num.isna().all() else None
        if num.isna().all() and (ordinal is None or ordinal["_pos"].isna().all()):
            raise UserError("--ppi-response: the run's responses are neither numbers nor options with ordinal "
                            "positions; name the response whose probability predicts the human outcome "
                            "(e.g. --ppi-response Yes)")
        if ordinal is not None:  # expected position over the substantive options, per trial
            s = shares(ordinal.dropna(subset=["_pos"]))
            p = s.assign(_v=s["_pos"] * s["share"]).groupby(["trial", unit], as_index=False)["_v"].sum()
        else:
            s = shares(rows.assign(response=num).dropna(subset=["response"]))
            p = s.assign(_v=s["response"] * s["share"]).groupby(["trial", unit], as_index=False)["_v"].sum()
        col = "_v"
    return p.groupby(unit, as_index=False)[col].mean().rename(columns={col: "yhat"})


def ppi_table(dirs, kw: dict) -> pd.DataFrame:
    """`analyze --ppi-human`: the side-by-side table of the run(s), computed before anything is written."""
    import numpy as np  # lazy: off --help's path (numpy)
    import pandas as pd  # lazy: off --help's path (pandas, pyarrow)

    from simsubjects.analyze.methods.ppi import mixed_subjects  # lazy: off --help's path (scipy, pandas)
    from simsubjects.collect.store import load_run  # lazy: off --help's path (pandas, numpy)

    runs = [load_run(d) for d in dirs]
    responses = pd.concat([r for _, r, _ in runs], ignore_index=True)
    items = runs[0][2]
    unit, outcome = kw["ppi_unit"], kw["ppi_outcome"]
    x = [c.strip() for c in (kw["ppi_x"] or "").split(",") if c.strip()]
    human = read_table(kw["ppi_human"], "--ppi-human")
    for c in (unit, outcome):
        if c not in human:
            raise UserError(f"--ppi-human {kw['ppi_human']}: no column {c!r}; available: {', '.join(map(str, human.columns))}")
    y = pd.to_numeric(human[outcome], errors="coerce")
    y = y.where(np.isfinite(y.astype(float)))  # inf and 1e400 are not outcomes either
    if y.isna().any():
        bad = int(y.isna().idxmax())
        raise UserError(f"--ppi-human {kw['ppi_human']}: row {bad + 2}: {outcome} = {human[outcome].iloc[bad]!r} "
                        "is not a number")
    survey = [c for c in (kw.get("ppi_weight"), kw.get("ppi_cluster")) if c]
    for c in survey:
        if c not in human:
            raise UserError(f"--ppi-human {kw['ppi_human']}: no column {c!r}; available: {', '.join(map(str, human.columns))}")
    hu = human.assign(**{outcome: y}).groupby(unit, as_index=False).agg(
        **{outcome: (outcome, "mean")}, **{c: (c, "first") for c in dict.fromkeys([*x, *survey]) if c in human and c != unit})
    units = model_predictions(responses, unit, kw["ppi_response"], items)
    if items is not None and unit in items:
        keep = [c for c in dict.fromkeys([*x, kw.get("ppi_cluster")]) if c and c in items and c != unit]
        units = units.merge(items[[unit, *keep]], on=unit, how="left")
    for c in x:  # a covariate only the human file has cannot describe the model-only units
        if c not in units:
            raise UserError(f"--ppi-x {c}: not a column of the run's items; covariates must be known for every unit")
    if x:
        units = units.dropna(subset=x)
        hu = hu[hu[unit].isin(units[unit])]
    return mixed_subjects(units, hu[[unit, outcome, *survey]], unit=unit, prediction="yhat", outcome=outcome,
                          estimand=kw["ppi_estimand"], x=x, weight=kw.get("ppi_weight"),
                          cluster=kw.get("ppi_cluster"))


def write_ppi(table: pd.DataFrame, outdir: Path) -> None:
    from simsubjects.collect.store import atomic_write_bytes  # lazy: off --help's path (pandas, numpy)

    atomic_write_bytes(Path(outdir) / "ppi.csv", table.to_csv(index=False).encode("utf-8"))


def ppi_requested(kw: dict) -> bool:
    extra = [k for k in ("ppi_x", "ppi_response", "ppi_weight", "ppi_cluster") if kw.get(k)]
    if not kw.get("ppi_human") and extra:
        raise UserError(f"--{extra[0].replace('_', '-')}: needs --ppi-human FILE")
    return bool(kw.get("ppi_human"))


def check_ppi_inputs(kw: dict) -> None:
    """Checks that need no analysis, before the run is read."""
    if kw.get("ppi_human") and not Path(kw["ppi_human"]).is_file():
        raise UserError(f"--ppi-human {kw['ppi_human']}: no such file")
    if kw.get("ppi_estimand", "mean") != "mean" and not kw.get("ppi_x"):
        raise UserError(f"--ppi-estimand {kw['ppi_estimand']}: name the covariate column(s) with --ppi-x")


@click.command("plan")
@click.argument("pilot", type=click.Path(dir_okay=False))
@click.option("--outcome", default="y", show_default=True, help="Human outcome column (empty where no human answered).")
@click.option("--prediction", default="yhat", show_default=True, help="Model prediction column (every unit).")
@click.option("--unit", default="item", show_default=True, help="Unit column (one row per unit).")
@click.option("--estimand", type=click.Choice(["mean", "difference", "ols"]), default="mean", show_default=True,
              help="mean; difference between two levels of one --x column (an AMCE); ols coefficients.")
@click.option("--x", "x", default="", help="Comma-separated covariate columns (rows missing one are left out).")
@click.option("--term", default=None, help="Coefficient to plan for (default: the last, i.e. the contrast).")
@click.option("--where", "where", multiple=True, help="Keep rows with COLUMN=VALUE (repeatable), e.g. task=causal.")
@click.option("--width", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Target full width of the interval (conf.high - conf.low).")
@click.option("--effect", type=float, default=None, help="Target effect: power of the two-sided test against it.")
@click.option("--power", "target_power", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.8,
              show_default=True, help="Power to reach for --effect.")
@click.option("--humans", type=click.IntRange(2, MAX_UNITS), default=None, help="Also report width and power at this many humans.")
@click.option("--n-model", type=click.IntRange(2, MAX_UNITS), default=None,
              help="Units the model answers in the full study, humans answering a subset (default: the pilot's units).")
@click.option("--subsample", type=click.IntRange(3, MAX_UNITS), default=None,
              help="Use only this many (seeded, random) of the pilot's human outcomes, to see what a smaller pilot says.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of --subsample.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True,
              help="Confidence level.")
def plan_command(pilot, outcome, prediction, unit, estimand, x, term, where, width, effect, target_power, humans,
                 n_model, subsample, seed, level):
    """How many humans a study needs, without and with the model's answers (PPI++).

    \b
    PILOT is a CSV or parquet table, one row per unit: the model's prediction on every unit and
    the human outcome where people answered (empty elsewhere). From the units with both it
    estimates the human-only variance and the PPI correlation (Broska, Howes & van Loon 2024)
    and reports the humans needed to reach --width and --power for --effect: human-only, with the
    model answering --n-model units (the humans answer a subset), and with unlimited model answers.
    Example (a MoCa factor's AMCE, from `analyze` of a MoCa run):
      simsubjects plan runs/moca/analysis/ppi_stories.csv --where task=causal \\
        --estimand difference --x agent_awareness --width 0.2 --effect 0.1 --subsample 50
    """
    from simsubjects.analyze.methods.plan import plan, read_pilot  # lazy: off --help's path (scipy, pandas)


    for name, v in (("--width", width), ("--effect", effect)):  # nan and inf pass click's float types
        if v is not None and not math.isfinite(v):
            raise UserError(f"plan: {name} {v}: must be a finite number")
    if effect is not None and effect == 0:
        raise UserError("plan: --effect 0: the power against no effect is the test's level; give a nonzero effect")
    if width is None and effect is None and humans is None:
        raise UserError("plan: give a target: --width W, --effect D or --humans N")
    xs = [c.strip() for c in x.split(",") if c.strip()]
    df = read_pilot(pilot, unit, outcome, prediction)
    for cond in where:
        col, sep, val = cond.partition("=")
        if not sep or col not in df:
            raise UserError(f"--where {cond}: expected COLUMN=VALUE with a column of {pilot}")
        df = df[df[col].astype(str) == val]
    table = plan(df, outcome=outcome, prediction=prediction, estimand=estimand, x=xs, term=term, n_model=n_model,
                 subsample=subsample, seed=seed, width=width, effect=effect, target_power=target_power,
                 humans=humans, level=level)

    n_lab = int(df[outcome].notna().sum()) if not subsample else subsample
    echo_table(f"plan for {table['term'].iloc[0]} from a pilot of {n_lab} human units "
               f"(sigma {table['sigma'].iloc[0]:.4g}, PPI correlation {table['ppi_corr'].iloc[1]:.3f})",
               table.drop(columns=["term"]).dropna(axis=1, how="all"))
    for what, col in (("width", "humans_for_width"), ("power", "humans_for_power")):
        if table[col].notna().any() or (what == "width" and width) or (what == "power" and effect):
            h, p, inf = table[col]
            target = f"an interval of width {width:g}" if what == "width" else f"{target_power:.0%} power for {effect:g}"
            click.echo(f"recommended for {target}: {_n(h)} humans without the model; {_n(p)} with the model on "
                       f"{int(table['n_model'].iloc[1])} units; {_n(inf)} with unlimited model answers")


def _n(v) -> str:
    import numpy as np  # lazy: off --help's path (numpy)

    return "more than available" if not np.isfinite(v) else f"{int(v)}"


def register(cli) -> None:
    cli.add_command(plan_command)
