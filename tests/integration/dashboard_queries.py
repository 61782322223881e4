#!/usr/bin/env python3
"""Validates every PromQL expression of netdiag's Grafana dashboards against a
live Prometheus (its HTTP API, /api/v1/query).

For each dashboard: the template variables' own queries (label_values(m, l)
is run as `group by (l) (m)`), then every panel target with the variables
filled in ($var / ${var} / [[var]] -> the variable's allValue, ".*" by
default, or a value given with --var; Grafana's $__rate_interval,
$__interval, $__range -> fixed durations). Any query error fails the run
and names the dashboard, panel and expression. Panels named with
--key-panel "UID/Panel title" must also return data (a non-empty result).

    dashboard_queries.py --prometheus http://127.0.0.1:9090 \
        [--dashboards deploy/grafana/dashboards] [--key-panel "netdiag-fabric/Localized link faults"]...

Exit 0 when every query ran (and every key panel has data), 1 otherwise,
2 on usage errors (no dashboards, Prometheus unreachable).
"""
import argparse
import glob
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m", "__range_s": "300",
            "__interval_ms": "15000"}


def query(prom, expr, timeout=10):
    """Returns (result list, error message or None)."""
    url = prom.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        try:
            body = json.load(e)
        except Exception:  # noqa: BLE001 - any unreadable error body
            return None, "HTTP %d" % e.code
    except (urllib.error.URLError, OSError) as e:
        raise SystemExit("dashboard_queries: cannot reach %s: %s" % (prom, e))
    if body.get("status") != "success":
        return None, "%s: %s" % (body.get("errorType", "error"), body.get("error", "?"))
    data = body.get("data", {})
    result = data.get("result", [])
    if data.get("resultType") == "scalar":
        result = [result]
    return result, None


def fill(expr, values):
    def sub(m):
        name = m.group(1) or m.group(2) or m.group(3)
        name = name.split(":")[0]  # ${var:regex} formats
        if name in values:
            return values[name]
        if name in BUILTINS:
            return BUILTINS[name]
        return m.group(0)
    return re.sub(r"\$\{([A-Za-z0-9_:]+)\}|\[\[([A-Za-z0-9_]+)\]\]|\$([A-Za-z_][A-Za-z0-9_]*)", sub, expr)


def variable_values(dashboard, overrides):
    values = {}
    for v in dashboard.get("templating", {}).get("list", []):
        name = v.get("name")
        if v.get("type") == "datasource":
            continue
        values[name] = overrides.get(name, v.get("allValue") or ".*")
    return values


def variable_query(v):
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query", "")
    m = re.fullmatch(r"\s*label_values\(\s*(.+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", q or "")
    if m:
        return "group by (%s) (%s)" % (m.group(2), m.group(1))
    m = re.fullmatch(r"\s*query_result\((.+)\)\s*", q or "")
    return m.group(1) if m else None


def panels(dashboard):
    for p in dashboard.get("panels", []):
        yield p
        for sub in p.get("panels", []):  # collapsed rows
            yield sub


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prometheus", required=True, help="Prometheus base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--dashboards", default=os.path.join(os.path.dirname(__file__), "..", "..", "deploy",
                                                         "grafana", "dashboards"),
                    help="a dashboard JSON file or a directory of them")
    ap.add_argument("--key-panel", action="append", default=[],
                    help='"UID/Panel title" that must return data (repeatable)')
    ap.add_argument("--var", action="append", default=[], help="name=value for a template variable")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every query and its series count")
    args = ap.parse_args()

    files = sorted(glob.glob(os.path.join(args.dashboards, "*.json"))) if os.path.isdir(args.dashboards) \
        else [args.dashboards]
    if not files:
        print("dashboard_queries: no dashboards in %s" % args.dashboards, file=sys.stderr)
        return 2
    overrides = dict(kv.split("=", 1) for kv in args.var)
    keys = set(args.key_panel)
    found_keys = set()
    errors, queries = [], 0
    for path in files:
        with open(path) as f:
            d = json.load(f)
        uid = d.get("uid", os.path.basename(path))
        values = variable_values(d, overrides)
        for v in d.get("templating", {}).get("list", []):
            q = variable_query(v)
            if v.get("type") != "query":
                continue
            if q is None:
                errors.append("%s: variable $%s: unsupported query %r" % (uid, v.get("name"), v.get("query")))
                continue
            queries += 1
            res, err = query(args.prometheus, fill(q, values))
            if err:
                errors.append("%s: variable $%s: %s\n    %s" % (uid, v.get("name"), err, q))
        for p in panels(d):
            title = p.get("title", "?")
            ident = "%s/%s" % (uid, title)
            targets = [t for t in p.get("targets", []) if t.get("expr")]
            if not targets:
                continue
            series = 0
            for t in targets:
                expr = fill(t["expr"], values)
                queries += 1
                res, err = query(args.prometheus, expr)
                if err:
                    errors.append("%s [%s]: %s\n    %s" % (ident, t.get("refId", "?"), err, expr))
                    continue
                series += len(res)
                if args.verbose:
                    print("%-60s %3d series  %s" % (ident[:60], len(res), expr))
            if ident in keys:
                found_keys.add(ident)
                if series == 0:
                    errors.append("%s: key panel returned no data" % ident)
    for k in sorted(keys - found_keys):
        errors.append("%s: no such panel (key panel)" % k)
    for e in errors:
        print("FAIL " + e, file=sys.stderr)
    print("dashboard_queries: %d dashboards, %d queries, %d key panels, %d problems"
          % (len(files), queries, len(keys), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
