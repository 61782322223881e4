#!/usr/bin/env python3
"""Writes netdiag's Grafana dashboards (dashboards/*.json) from one description,
so that panels, variables and conventions stay consistent. The JSON files are
checked in and provisionable as they are; re-run after editing:

    python3 deploy/grafana/generate.py

Every expression here is validated against a Prometheus that scrapes a live
analyzer by tests/integration/dashboard_queries.py (run from
tests/integration/alerting.sh).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DS = {"type": "prometheus", "uid": "${datasource}"}
I = 'instance=~"$instance"'


def variables(extra=()):
    out = [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1, "options": []},
        {"name": "instance", "label": "Analyzer", "type": "query", "datasource": DS,
         "query": {"query": "label_values(netdiag_analyzer_up, instance)", "refId": "instance"},
         "definition": "label_values(netdiag_analyzer_up, instance)",
         "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {}, "options": [],
         "hide": 0, "sort": 1},
    ]
    for name, label, metric, lab in extra:
        q = "label_values(%s, %s)" % (metric, lab)
        out.append({"name": name, "label": label, "type": "query", "datasource": DS,
                    "query": {"query": q, "refId": name}, "definition": q,
                    "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {},
                    "options": [], "hide": 0, "sort": 1})
    return out


class Board:
    def __init__(self, uid, title, description, extra_vars=()):
        self.uid, self.title, self.description = uid, title, description
        self.panels, self.x, self.y, self.row_h = [], 0, 0, 0
        self.vars = variables(extra_vars)

    def place(self, w, h):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_h
            self.row_h = 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        self.x, self.y = 0, self.y + self.row_h
        self.row_h = 0
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "id": len(self.panels) + 1, "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}})
        self.y += 1

    def panel(self, kind, title, description, targets, w=6, h=6, unit=None, options=None,
              transformations=None, field_config=None):
        fc = field_config or {"defaults": {}, "overrides": []}
        if unit:
            fc["defaults"]["unit"] = unit
        p = {"id": len(self.panels) + 1, "type": kind, "title": title, "description": description,
             "datasource": DS, "gridPos": self.place(w, h), "fieldConfig": fc,
             "options": options or {}, "targets": []}
        for n, t in enumerate(targets):
            expr, legend = (t, "") if isinstance(t, str) else t
            instant = kind in ("table", "stat", "bargauge", "gauge")
            p["targets"].append({"refId": chr(ord("A") + n), "datasource": DS, "expr": expr,
                                 "legendFormat": legend, "instant": instant, "range": not instant,
                                 "format": "table" if kind == "table" else "time_series"})
        if transformations:
            p["transformations"] = transformations
        self.panels.append(p)

    def json(self):
        return {"uid": self.uid, "title": self.title, "description": self.description,
                "tags": ["netdiag"], "timezone": "", "schemaVersion": 37, "version": 1,
                "editable": True, "graphTooltip": 1, "refresh": "30s",
                "time": {"from": "now-6h", "to": "now"},
                "templating": {"list": self.vars}, "annotations": {"list": []},
                "links": [{"title": "netdiag dashboards", "type": "dashboards", "tags": ["netdiag"],
                           "asDropdown": True}],
                "panels": self.panels}


def merge_table(exclude=()):
    return [{"id": "merge", "options": {}},
            {"id": "organize", "options": {"excludeByName": {k: True for k in ("Time",) + tuple(exclude)}}}]


def fabric():
    b = Board("netdiag-fabric", "netdiag / Fabric overview",
              "What is wrong in the fabric now: localized link faults, suspects, health by tier and pod, "
              "and the incident timeline. Runbook: docs/runbook.md.",
              [("tier", "Tier", "netdiag_fabric_links", "tier"), ("pod", "Pod", "netdiag_fabric_links", "pod")])
    b.row("Now")
    b.panel("stat", "Localized link faults", "Links netdiag localized with paging confidence (open incidents).",
            ['sum(netdiag_link_fault{%s}) or vector(0)' % I], unit="none",
            field_config={"defaults": {"thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "red", "value": 1}]}}, "overrides": []})
    b.panel("stat", "Suspect links", "Open incidents not yet localized (evidence below paging confidence).",
            ['count(netdiag_suspect_link_loss_ratio{state="open",%s}) or vector(0)' % I], unit="none")
    b.panel("stat", "Hosts unreachable", "Localized host_unreachable incidents (dead host or responder).",
            ['count(netdiag_host_unreachable{%s}) or vector(0)' % I], unit="none")
    b.panel("stat", "Probe coverage", "Share of directed links crossed by enough probes to localize a fault.",
            ['min(netdiag_probe_coverage_ratio{%s})' % I], unit="percentunit")
    b.row("Health by tier and pod")
    b.panel("bargauge", "Link health by tier",
            "Share of each tier's links without an open incident.",
            [('1 - sum by (tier) (netdiag_fabric_links_affected{tier=~"$tier",pod=~"$pod",%s}) '
              '/ sum by (tier) (netdiag_fabric_links{tier=~"$tier",pod=~"$pod",%s})' % (I, I), "{{tier}}")],
            w=12, h=7, unit="percentunit", options={"orientation": "horizontal", "displayMode": "gradient"},
            field_config={"defaults": {"min": 0, "max": 1}, "overrides": []})
    b.panel("table", "Links affected by tier and pod",
            "Links with an open incident (localized or suspected) per tier and pod, against the links there.",
            [('sum by (tier, pod) (netdiag_fabric_links{tier=~"$tier",pod=~"$pod",%s})' % I, ""),
             ('sum by (tier, pod) (netdiag_fabric_links_affected{state="localized",tier=~"$tier",pod=~"$pod",%s})' % I, ""),
             ('sum by (tier, pod) (netdiag_fabric_links_affected{state="open",tier=~"$tier",pod=~"$pod",%s})' % I, "")],
            w=12, h=7, transformations=merge_table() + [{"id": "organize", "options": {"renameByName": {
                "Value #A": "links", "Value #B": "localized faults", "Value #C": "suspects"}}}])
    b.row("Suspect links")
    b.panel("table", "Suspect links with evidence",
            "Links named by open incidents: estimated loss, confidence, state, and whether draining is safe. "
            "Details: netdiag explain <incident>.",
            [('max by (device, interface, neighbor_device, neighbor_interface, kind, incident, state) '
              '(netdiag_suspect_link_loss_ratio{%s})' % I, ""),
             ('max by (device, interface, neighbor_device, neighbor_interface, kind, incident, state) '
              '(netdiag_suspect_link_confidence{%s})' % I, ""),
             ('max by (device, interface, neighbor_device, neighbor_interface, advice) '
              '(netdiag_link_drain_info{%s})' % I, "")],
            w=24, h=8, transformations=merge_table(["Value #C"]) + [{"id": "organize", "options": {
                "renameByName": {"Value #A": "loss ratio", "Value #B": "confidence", "advice": "drain advice"}}}],
            field_config={"defaults": {}, "overrides": [
                {"matcher": {"id": "byName", "options": "loss ratio"},
                 "properties": [{"id": "unit", "value": "percentunit"}]}]})
    b.panel("table", "Most degraded links (loss over background)",
            "The top-N directed links by loss in excess of the fabric's background, whether or not an "
            "incident names them (evidence over the analyzer's horizon).",
            [('topk(20, max by (device, interface, neighbor_device, neighbor_interface) '
              '(netdiag_degraded_link_excess_loss_ratio{%s}))' % I, ""),
             ('max by (device, interface, neighbor_device, neighbor_interface) '
              '(netdiag_degraded_link_loss_ratio{%s})' % I, ""),
             ('max by (device, interface, neighbor_device, neighbor_interface) '
              '(netdiag_degraded_link_probes{%s})' % I, "")],
            w=24, h=8, transformations=merge_table() + [{"id": "organize", "options": {"renameByName": {
                "Value #A": "excess loss", "Value #B": "loss ratio", "Value #C": "probes"}}}])
    b.row("Incident timeline")
    b.panel("timeseries", "Open incidents by kind and state",
            "Incidents not resolved, by kind (link_loss, link_down, ...) and state (open, localized).",
            [('sum by (kind, state) (netdiag_open_incidents{%s}) > 0' % I, "{{kind}} {{state}}"),
             ('sum(netdiag_open_incidents{%s})' % I, "all")], w=12, h=8, unit="none")
    b.panel("state-timeline", "Link faults over time",
            "Each localized link fault while it lasted.",
            [('max by (incident, kind, device, interface, neighbor_device, neighbor_interface) '
              '(netdiag_link_fault{%s})' % I,
              "{{incident}} {{kind}} {{device}}:{{interface}} -> {{neighbor_device}}:{{neighbor_interface}}")],
            w=12, h=8)
    b.panel("timeseries", "Time to localize",
            "Telemetry time from an incident's opening to its localization (quantiles over the interval).",
            [('histogram_quantile(0.5, sum by (le) (rate(netdiag_incident_localize_delay_seconds_bucket{%s}[$__rate_interval])))' % I, "p50"),
             ('histogram_quantile(0.9, sum by (le) (rate(netdiag_incident_localize_delay_seconds_bucket{%s}[$__rate_interval])))' % I, "p90")],
            w=12, h=7, unit="s")
    b.panel("timeseries", "Estimated loss of suspect links",
            "Estimated loss ratio of each link named by an open incident.",
            [('max by (incident, device, interface, neighbor_device, neighbor_interface) '
              '(netdiag_suspect_link_loss_ratio{%s})' % I,
              "{{device}}:{{interface}} -> {{neighbor_device}}:{{neighbor_interface}} ({{incident}})"),
             ('max(netdiag_background_loss_ratio{%s})' % I, "background")], w=12, h=7, unit="percentunit")
    return b


def agents():
    b = Board("netdiag-agents", "netdiag / Agents and probe coverage",
              "Which agents report, how much, and how much of the fabric the probes cover.",
              [("agent", "Agent", "netdiag_agent_connected", "agent")])
    b.panel("stat", "Agents connected", "Agents holding a stream open to the analyzer.",
            ['sum(netdiag_agents{state="connected",%s})' % I], unit="none")
    b.panel("stat", "Agents disconnected", "Agents the analyzer knows that have no stream open.",
            ['sum(netdiag_agents{state="disconnected",%s})' % I], unit="none",
            field_config={"defaults": {"thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": 1}]}}, "overrides": []})
    b.panel("stat", "Probe coverage", "Share of directed links crossed by enough probes of known path.",
            ['min(netdiag_probe_coverage_ratio{%s})' % I], unit="percentunit")
    b.panel("stat", "Directed links covered", "Covered directed links / all directed links.",
            ['sum(netdiag_directed_links_covered{%s})' % I, 'sum(netdiag_directed_links{%s})' % I], unit="none")
    b.panel("table", "Agents",
            "Per agent: connected, seconds since its last batch, records received.",
            [('max by (agent) (netdiag_agent_connected{agent=~"$agent",%s})' % I, ""),
             ('time() - max by (agent) (netdiag_agent_last_seen_timestamp_seconds{agent=~"$agent",%s})' % I, ""),
             ('max by (agent) (netdiag_agent_records{agent=~"$agent",%s})' % I, "")],
            w=12, h=9, transformations=merge_table() + [{"id": "organize", "options": {"renameByName": {
                "Value #A": "connected", "Value #B": "seconds since last batch", "Value #C": "records"}}}])
    b.panel("timeseries", "Records per second by agent", "Telemetry records received from each agent.",
            [('sum by (agent) (rate(netdiag_agent_records{agent=~"$agent",%s}[$__rate_interval]))' % I, "{{agent}}")],
            w=12, h=9, unit="ops")
    b.panel("timeseries", "Probe coverage over time", "Share of directed links covered by enough probes.",
            [('min(netdiag_probe_coverage_ratio{%s})' % I, "coverage")], w=12, h=7, unit="percentunit",
            field_config={"defaults": {"min": 0, "max": 1}, "overrides": []})
    b.panel("timeseries", "Seconds since last batch", "Per agent; a rising line is an agent gone quiet.",
            [('time() - max by (agent) (netdiag_agent_last_seen_timestamp_seconds{agent=~"$agent",%s})' % I, "{{agent}}")],
            w=12, h=7, unit="s")
    return b


def analyzer():
    b = Board("netdiag-analyzer", "netdiag / Analyzer self-monitoring",
              "The analyzer's own health: ingest, drops, engine passes, lag and detection delays.")
    b.panel("stat", "Analyzer up", "1 while the analyzer runs and updates its metrics.",
            ['min(netdiag_analyzer_up{%s})' % I], unit="none")
    b.panel("stat", "Engine lag", "Wall clock minus the newest telemetry time ingested.",
            ['max(time() - netdiag_telemetry_newest_timestamp_seconds{%s})' % I], unit="s")
    b.panel("stat", "Metrics age", "Seconds since the last engine pass reflected in the metrics.",
            ['max(time() - netdiag_metrics_last_update_timestamp_seconds{%s})' % I], unit="s")
    b.panel("stat", "Background loss", "Fabric-wide loss ratio every link is assumed to have.",
            ['max(netdiag_background_loss_ratio{%s})' % I], unit="percentunit")
    b.panel("timeseries", "Records ingested per second",
            "By kind (probe, port, lldp).",
            [('sum by (kind) (rate(netdiag_ingest_records_total{%s}[$__rate_interval]))' % I, "{{kind}}")],
            w=12, h=8, unit="ops")
    b.panel("timeseries", "Batches per second",
            "Batches from agents, and duplicates dropped (at-least-once redelivery).",
            [('sum(rate(netdiag_ingest_batches_total{%s}[$__rate_interval]))' % I, "batches"),
             ('sum(rate(netdiag_ingest_duplicate_batches_total{%s}[$__rate_interval]))' % I, "duplicates")],
            w=12, h=8, unit="ops")
    b.panel("timeseries", "Malformed and late records per second",
            "Malformed (skipped), late within tolerance (used), too late (stored, not used for past decisions).",
            [('sum(rate(netdiag_ingest_malformed_records_total{%s}[$__rate_interval]))' % I, "malformed"),
             ('sum(rate(netdiag_ingest_late_records_total{%s}[$__rate_interval]))' % I, "late"),
             ('sum(rate(netdiag_ingest_too_late_records_total{%s}[$__rate_interval]))' % I, "too late")],
            w=12, h=8, unit="ops")
    b.panel("timeseries", "Engine passes per second", "Decision passes run by the engine.",
            [('sum(rate(netdiag_engine_passes_total{%s}[$__rate_interval]))' % I, "passes")], w=12, h=8, unit="ops")
    b.panel("timeseries", "Detection delay",
            "Wall-clock time from an incident's opening (telemetry time) to its publication in the metrics.",
            [('histogram_quantile(0.9, sum by (le) (rate(netdiag_incident_detect_delay_seconds_bucket{%s}[$__rate_interval])))' % I, "p90"),
             ('sum(increase(netdiag_incident_detect_delay_seconds_count{%s}[$__rate_interval]))' % I, "incidents opened")],
            w=24, h=7, unit="s")
    return b


def main():
    for b in (fabric(), agents(), analyzer()):
        path = os.path.join(HERE, "dashboards", b.uid + ".json")
        with open(path, "w") as f:
            json.dump(b.json(), f, indent=2, sort_keys=True)
            f.write("\n")
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    main()
