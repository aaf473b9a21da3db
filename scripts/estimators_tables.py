#!/usr/bin/env python3
"""Markdown tables of `calib experiment estimators` (its estimators.json) for
EXPERIMENTS.md: the summary of every estimator against the truth of its target,
the many-class table, the table against n, calibrated models, the top-label
estimators, interval coverage by estimator, and the variational paper's settings.

    python3 scripts/estimators_tables.py DIR/estimators.json
"""
import json
import sys
from collections import defaultdict

r = json.load(open(sys.argv[1]))
rows = r["rows"]
EST = ["variational", "variational-temperature", "witness", "plug-in", "binned"]


def ratio(row):
    return row["stat"]["mean"] / row["truth"] if row["truth"] > 1e-9 else float("nan")


def cell(rows, fam, alpha, k, n, est, target="CE_1"):
    for x in rows:
        if (x["family"], x["k"], x["n"], x["estimator"], x["target"]) == (fam, k, n, est, target) and abs(x["alpha"] - alpha) < 1e-12:
            return x
    return None


def fmt_ratio(x):
    if x is None or x["stat"]["mean"] is None:
        return "-"
    if x["truth"] <= 1e-9:
        return f'{x["stat"]["mean"]:+.3f}'
    return f"{ratio(x):.2f}"


fams = ["paper", "temperature", "smoothing", "prior_shift", "entropic", "calibrated"]


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = q * (len(xs) - 1)
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def summary(rows, title, nmin):
    print(f"### {title}\n")
    print("ratio: the cell's mean over its data sets / the truth, over the miscalibrated cells (median and 10 to 90 % of the cells); "
          "rel. RMSE: the cell's RMSE / truth (median over those cells); calibrated: the cells' means on calibrated models (truth 0), "
          "least and largest; s: mean seconds per data set at n = 5,000 (5,719 in the paper's settings).\n")
    print("| estimator | target | cells | median ratio | ratio 10 % to 90 % | median rel. RMSE | calibrated | s at n = 5,000 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    seen = []
    for x in rows:
        key = (x["estimator"], x["target"])
        if key not in seen:
            seen.append(key)
    for est, target in seen:
        sel = [x for x in rows if (x["estimator"], x["target"]) == (est, target) and x["n"] >= nmin and x["stat"]["mean"] is not None]
        if not sel:
            continue
        cal = [x["stat"]["mean"] for x in sel if x["family"] in ("calibrated", "perfectly_calibrated_mc")]
        mis = [x for x in sel if x["family"] not in ("calibrated", "perfectly_calibrated_mc") and x["truth"] > 1e-9]
        rat = [ratio(x) for x in mis]
        rr = [x["rmse"] / x["truth"] for x in mis]
        secs = [x["seconds"] for x in sel if x["n"] in (5000, 5719)]
        cal_s = f"{min(cal):+.4f} to {max(cal):+.4f}" if cal else "-"
        sec_s = f"{sum(secs)/len(secs):.3f}" if secs else "-"
        print(f"| {est} | {target} | {len(sel)} | {quantile(rat, 0.5):.2f} | {quantile(rat, 0.1):.2f} to {quantile(rat, 0.9):.2f} | "
              f"{quantile(rr, 0.5):.2f} | {cal_s} | {sec_s} |")
    print()


summary(rows, "Every estimator against the truth of its target (synthetic cells with n >= 1,000)", 1000)
if r.get("paper") and r["paper"][0].get("rows"):
    summary([x for p in r["paper"] for x in p["rows"]], "Every estimator on the variational paper's 24 settings (n = 1,069 to 10,000)", 0)
print("### Many classes: mean / truth of the CE_1 estimates at n = 5,000 (calibrated: the mean itself)\n")
print("| truths | family | K | truth | " + " | ".join(EST) + " |")
print("|" + " --- |" * (4 + len(EST)))
for sharp in (False, True):
    for k in (20, 50, 100):
        for fam in fams:
            alpha = 1 / k if sharp else 1.0
            xs = [cell(rows, fam, alpha, k, 5000, e) for e in EST]
            if all(x is None for x in xs):
                continue
            t = next(x for x in xs if x is not None)["truth"]
            print(f'| {"Dir(1/K)" if sharp else "Dir(1)"} | {fam} | {k} | {t:.4f} | ' + " | ".join(fmt_ratio(x) for x in xs) + " |")

print("\n### Against n (flat truths): mean / truth of the CE_1 estimates\n")
print("| family | K | n | truth | " + " | ".join(EST) + " |")
print("|" + " --- |" * (4 + len(EST)))
for k in (2, 4, 10):
    for fam in fams:
        for n in (100, 1000, 5000, 20000):
            xs = [cell(rows, fam, 1.0, k, n, e) for e in EST]
            if all(x is None for x in xs):
                continue
            t = next(x for x in xs if x is not None)["truth"]
            print(f"| {fam} | {k} | {n} | {t:.4f} | " + " | ".join(fmt_ratio(x) for x in xs) + " |")

TOP = [("ece-bin", "TL_1"), ("ece-bin-mass", "TL_1"), ("ece-bin-doane", "TL_1"), ("ece-bin-sqrt", "TL_1"), ("ece-sweep", "TL_1"),
       ("ece-sweep-width", "TL_1"), ("smece", "TL_1"), ("ks", "KS"), ("atb", "ATB_1")]
print("\n### Top-label estimators: mean / truth of their targets (calibrated: the mean itself)\n")
print("| truths | family | K | n | TL_1 | " + " | ".join(e for e, _ in TOP) + " |")
print("|" + " --- |" * (5 + len(TOP)))
for sharp in (False, True):
    for k in (2, 4, 10, 20, 50, 100):
        for fam in fams:
            for n in (100, 1000, 5000, 20000):
                alpha = 1 / k if sharp else 1.0
                xs = [cell(rows, fam, alpha, k, n, e, t) for e, t in TOP]
                if all(x is None for x in xs):
                    continue
                t = next(x for x in xs if x is not None)["truth"]
                print(f'| {"Dir(1/K)" if sharp else "Dir(1)"} | {fam} | {k} | {n} | {t:.4f} | ' + " | ".join(fmt_ratio(x) for x in xs) + " |")

print("\n### Interval coverage of the truth, all cells\n")
print("| estimator | target | cells | data sets | 95 % interval held the truth | one-sided 95 % lower bound <= truth | of which calibrated: interval, lower bound |")
print("| --- | --- | --- | --- | --- | --- | --- |")
agg = defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0])
for x in rows:
    if x["intervals"] == 0:
        continue
    a = agg[(x["estimator"], x["target"])]
    a[0] += 1
    a[1] += x["intervals"]
    a[2] += x["covered"]
    a[3] += x["below"]
    if x["family"] == "calibrated":
        a[4] += x["intervals"]
        a[5] += x["covered"]
        a[6] += x["below"]
for (e, t), a in sorted(agg.items()):
    cal = f"{a[5]}/{a[4]}, {a[6]}/{a[4]}" if a[4] else "-"
    print(f"| {e} | {t} | {a[0]} | {a[1]} | {a[2]}/{a[1]} ({100*a[2]/a[1]:.0f} %) | {a[3]}/{a[1]} ({100*a[3]/a[1]:.0f} %) | {cal} |")

def share(sel, key):
    """The percentage of the intervals of the rows sel that count under key ("covered" or "below"), or None."""
    iv = sum(x["intervals"] for x in sel)
    return 100 * sum(x[key] for x in sel) / iv if iv else None


print("\n### Coverage by K: interval / lower bound\n")
ks = sorted({x["k"] for x in rows})
print("| estimator | " + " | ".join(f"K = {k}" for k in ks) + " |")
print("|" + " --- |" * (1 + len(ks)))
for e, target in (("variational", "CE_1"), ("variational-temperature", "CE_1"), ("witness", "CE_1"), ("ece-bin", "TL_1"), ("ks", "KS")):
    parts = []
    for k in ks:
        sel = [x for x in rows if x["estimator"] == e and x["target"] == target and x["k"] == k]
        parts.append("-" if share(sel, "covered") is None else f'{share(sel, "covered"):.0f} % / {share(sel, "below"):.0f} %')
    print(f"| {e} ({target}) | " + " | ".join(parts) + " |")

IV = [("variational", "maps' jackknife, upper end + optimism / 2 (calib, before the families' simultaneous interval)"), ("variational-conditional", "rows given the maps"),
      ("variational-repeated", "repeated cross-fitting, 3 seeds, median (DoubleML)"), ("variational-two-size", "rows, upper end + two-size bias")]
if any(x["estimator"] == "variational-conditional" for x in rows):
    print("\n### The variational CE_1 intervals by K (synthetic cells with n >= 1,000; the paper's settings apart)\n")
    print("Each cell: data sets whose 95 % interval held the truth, and the mean width over the miscalibrated data sets "
          "relative to the conditional interval's.\n")

    def width_ratio(sel, base):
        num = sum(x["width"] * x["intervals"] for x in sel if x["family"] not in ("calibrated", "perfectly_calibrated_mc"))
        den = sum(x["width"] * x["intervals"] for x in base if x["family"] not in ("calibrated", "perfectly_calibrated_mc"))
        return num / den if den else float("nan")

    groups = [(f"K = {k}", lambda x, k=k: x["k"] == k and x["n"] >= 1000) for k in sorted({x["k"] for x in rows})]
    groups.append(("all", lambda x: x["n"] >= 1000))
    prows = [x for p in r.get("paper", []) for x in p.get("rows", [])]
    for k in sorted({x["k"] for x in prows}):
        groups.append((f"paper K = {k}", lambda x, k=k: x["k"] == k and x.get("_paper")))
    for x in prows:
        x["_paper"] = True
    print("| interval | " + " | ".join(g for g, _ in groups) + " |")
    print("|" + " --- |" * (1 + len(groups)))
    for e, label in IV:
        parts = []
        for g, sel_fn in groups:
            pool = prows if g.startswith("paper") else rows
            sel = [x for x in pool if x["estimator"] == e and x["target"] == "CE_1" and sel_fn(x)]
            base = [x for x in pool if x["estimator"] == "variational-conditional" and x["target"] == "CE_1" and sel_fn(x)]
            parts.append("-" if share(sel, "covered") is None else f'{share(sel, "covered"):.0f} % ({width_ratio(sel, base):.2f})')
        print(f"| {e}: {label} | " + " | ".join(parts) + " |")

if r.get("paper"):
    print("\n### The variational paper's published settings (f ~ Dir(0.5), canonical L1)\n")
    print("| h | K | n | paper's truth | truth | calib auto (sd) | calib temperature | calib witness | paper TS | paper isotonic | paper CatBoost | paper binning | interval / lower bound held |")
    print("|" + " --- |" * 13)
    for p in r["paper"]:
        pub = p["published"]
        v = p["variational"]
        print(f'| {p["h_func"]} | {p["k"]} | {p["n"]} | {p["paper_truth"]:.4f} | {p["truth"]:.4f} | {v["mean"]:.4f} ({v["sd"]:.4f}) | '
              f'{p["variational_temperature"]["mean"]:.4f} | {p["witness"]["mean"]:.4f} | {pub["TSPredictor"][0]:.4f} | {pub["IsotonicPredictor"][0]:.4f} | '
              f'{pub["BetterCatBoost"][0]:.4f} | {pub["Binning_Classic"][0]:.4f} | {p["covered"]}/{v["reps"]}, {p["below"]}/{v["reps"]} |')

chosen = defaultdict(lambda: defaultdict(int))
for x in rows:
    if x["estimator"] == "variational" and x["target"] == "CE_1" and x.get("chosen"):
        for part in x["chosen"].split(","):
            name, c = part.split(":")
            chosen[x["family"]][name] += int(c)
print("\n### Families the variational estimator chose (CE_1, all cells)\n")
print("| family | " + " | ".join(["temperature", "log-spline-shared", "log-spline"]) + " |")
print("| --- | --- | --- | --- |")
for fam in fams:
    if fam in chosen:
        print(f"| {fam} | " + " | ".join(str(chosen[fam].get(n, 0)) for n in ["temperature", "log-spline-shared", "log-spline"]) + " |")
