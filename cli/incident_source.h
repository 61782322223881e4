#pragma once

// Where the on-call commands (locate, incidents, explain) get incidents:
// a running analyzer's HTTP API (`--analyzer URL`) or its SQLite database
// offline (`--db FILE`). Both give formats.md §3 incident objects, so the
// commands format one thing. Also the shared table helpers: severity order,
// the link in words, one line of evidence, times, colour.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drain/context.h"
#include "store/incident_store.h"
#include "topology/model.h"

namespace netdiag::cli {

struct IncidentSet {
  double generated_at = 0;
  std::vector<nlohmann::json> incidents;  // formats.md §3 incident objects
};

// GET base_url + path (base "http://host:port"); the parsed body of a 200
// answer, else nullopt with *error naming the URL and the failure.
// *status gets the HTTP status (0 when no answer came). `base_urls` may list
// several analyzers, comma-separated (a replica pair): each is tried in
// turn and the first that answers is used.
std::optional<nlohmann::json> httpGetJson(const std::string& base_urls, const std::string& path,
                                          std::string* error, int* status = nullptr);

// A formats.md §3 report: {"generated_at", "incidents": [...]}.
std::optional<IncidentSet> reportFromJson(const nlohmann::json& j, std::string* error);

// Incidents in the database matching `query`, newest telemetry time of
// their updates as generated_at. Rows whose JSON is bad are skipped and
// named in *problems.
std::optional<IncidentSet> loadFromDb(const std::string& file, const store::IncidentQuery& query,
                                      std::string* error, std::vector<std::string>* problems);
// One incident's object, nullopt with *error when absent or unreadable.
std::optional<nlohmann::json> loadOneFromDb(const std::string& file, const std::string& id,
                                            std::string* error);

// The drain context of these formats.md §3 incidents: the links of the
// open ones that take theirs out of service (drain/context.h). Incidents
// naming a link `topo` does not have are skipped.
drain::Context drainContextOf(const topology::Topology& topo,
                              const std::vector<nlohmann::json>& incidents);

// A time filter: an absolute telemetry time ("1700000000", "120.5") or an
// age before `now` ("90s", "15m", "2h", "1d"). nullopt when malformed.
std::optional<double> parseSince(const std::string& text, double now);

bool isOpen(const nlohmann::json& incident);
bool isLocalized(const nlohmann::json& incident);
// "critical" for localized faults that lose traffic, "warning" otherwise.
std::string severityOf(const nlohmann::json& incident);
// Most urgent first: localized before suspects, then by kind, then by loss.
void sortBySeverity(std::vector<nlohmann::json>& incidents);
// "leaf1:swp3 -> spine1:swp1" ("<->" both ways), "host host4", "ports a:1, b:2".
std::string whereInWords(const nlohmann::json& incident);
// The evidence's summary, or its method, or "-"; one line.
std::string evidenceLine(const nlohmann::json& incident);
// An ambiguity group's other members ("leaf2:swp1->h4:eth0, host h4"),
// empty when the incident has none.
std::string candidatesLine(const nlohmann::json& incident);
// A telemetry time for people: UTC date and time when it looks like Unix
// time (live analyzers), else "t=120.0" (simulations and replays).
std::string clockText(double t);
// "4m10s" for a number of seconds.
std::string durationText(double seconds);
std::string numberOr(const nlohmann::json& j, const char* key, const char* fallback, int precision);

// Colour on stdout only for a terminal and when NO_COLOR is unset.
bool useColour();
std::string paint(const std::string& text, const char* ansi, bool colour);

}  // namespace netdiag::cli
