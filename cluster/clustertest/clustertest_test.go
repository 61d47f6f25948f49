package clustertest

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/contested/contested/cluster"
	"github.com/contested/contested/internal/envvar"
)

func TestOptions(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	t.Setenv(envvar.ResultsDir, results)
	tests := []struct {
		name    string
		env     map[string]string
		want    func(cluster.Options) bool
		wantErr error
	}{
		{"a test's own run: records where the gate counts them, artifacts aside", nil, func(o cluster.Options) bool {
			return o.RecordDir == results && o.ResultsRoot != results && !o.Keep && !o.Local && o.Replicas == 0
		}, nil},
		{"under the target: its options, everything under the results directory", map[string]string{
			envvar.ClusterTarget: "1", envvar.ClusterReplicas: "5", envvar.ClusterKeep: "true", envvar.ClusterLocal: "1",
		}, func(o cluster.Options) bool {
			return o.RecordDir == "" && o.ResultsRoot == results && o.Keep && o.Local && o.Replicas == 5
		}, nil},
		{"the target's default replicas", map[string]string{envvar.ClusterTarget: "1", envvar.ClusterReplicas: "0"}, func(o cluster.Options) bool {
			return o.Replicas == 0
		}, nil},
		{"replicas that are no number", map[string]string{envvar.ClusterTarget: "1", envvar.ClusterReplicas: "five"}, nil, cluster.ErrUsage},
		{"keep that is no boolean", map[string]string{envvar.ClusterTarget: "1", envvar.ClusterKeep: "maybe"}, nil, cluster.ErrUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{envvar.ClusterTarget, envvar.ClusterReplicas, envvar.ClusterKeep, envvar.ClusterLocal} {
				t.Setenv(k, tt.env[k])
			}
			o, err := Options(t)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Options: %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if o.Dir != root || o.Package != "github.com/contested/contested/cluster/clustertest" || o.TestName != t.Name() || !tt.want(o) {
				t.Errorf("Options = %+v", o)
			}
		})
	}
}
