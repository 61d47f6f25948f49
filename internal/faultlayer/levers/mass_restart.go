package levers

import "context"

// NameMassRestart is MassRestart's name.
const NameMassRestart = "mass-restart"

// MassRestart kills every replica of Target.Cluster at once with SIGKILL
// and restarts them all on Heal. The injector side is every replica's exit
// status; the victim side (Judged) is that a killed replica was working
// in the second before, work was still to come, and a restarted replica
// took work again.
var MassRestart Lever = massRestart{spec{
	name:    NameMassRestart,
	meaning: "every replica is killed and restarted at once",
	cluster: true,
	needs:   NeedCluster,
	doc: Doc{
		Arm:      "SIGKILL every replica of the cluster rig at once; `Heal` restarts them all",
		Injector: "every replica's exit status: killed by SIGKILL",
		Victim:   "judged: a killed replica was working the second before, and a restarted one took work again",
		Levels:   clusterLevels,
	},
}}

type massRestart struct{ spec }

func (m massRestart) Arm(ctx context.Context, t Target) (Fault, error) {
	if err := t.check(m, m.needs); err != nil {
		return nil, err
	}
	all := make([]int, len(t.Cluster.Names()))
	for i := range all {
		all[i] = i
	}
	return killReplicas(ctx, t.Cluster, t, all)
}
