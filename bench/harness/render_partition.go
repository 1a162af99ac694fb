package harness

import "strings"

// renderPartition writes, under the partition scenario's table, the same
// figures of each library that measured them in a row per number of
// processes: the acceptance of issue 45 at a glance.
func renderPartition(p printf, reports []*Report) {
	for _, r := range reports {
		var params []string
		byParam := map[string]map[string]Figure{}
		for _, f := range r.Figures {
			if f.Scenario != PartitionScenario {
				continue
			}
			if byParam[f.Param] == nil {
				byParam[f.Param] = map[string]Figure{}
				params = append(params, f.Param)
			}
			byParam[f.Param][f.Metric] = f
		}
		if len(params) == 0 {
			continue
		}
		p("%s, a row per number of processes (medians of the runs; moved: the most in a run, against the fewest that must move):\n\n", r.Lib)
		p("| processes, shards | join → balanced (ms) | in heartbeats | join: moved / fewest | leave → balanced (ms) | leave: moved / fewest | SIGKILL → every shard owned (× TTL, median / max) | handoff of a shard, p50 / max (ms) | steady state: commands per member per heartbeat | of which the lease's upkeep / the partition's own |\n")
		p("|---|---|---|---|---|---|---|---|---|---|\n")
		for _, param := range params {
			fs := byParam[param]
			get := func(prefix string) string {
				if f, ok := fs[prefix]; ok {
					return cell(f, true)
				}
				for m, f := range fs {
					if strings.HasPrefix(m, prefix) {
						return cell(f, true)
					}
				}
				return "–"
			}
			pair := func(a, b string) string {
				x, y := get(a), get(b)
				if x == "–" && y == "–" {
					return "–"
				}
				return x + " / " + y
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", param,
				get("join → balanced, median"),
				get("join → balanced, median, in heartbeats"),
				pair("join: shards moved", "join: fewest"),
				get("graceful leave (Close) → balanced, median"),
				pair("graceful leave: shards moved", "graceful leave: fewest"),
				pair("SIGKILL → every shard owned again, median (TTL", "SIGKILL → every shard owned again, max (TTL"),
				pair("handoff of one shard (", "handoff of one shard, max"),
				get("steady state: commands per member per heartbeat"),
				pair("steady state: the lease's upkeep", "steady state: the partition's own"))
		}
		p("\n")
	}
}
