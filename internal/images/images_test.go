package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
)

func TestParseAptSources(t *testing.T) {
	tests := []struct {
		name string
		text string
		deb  bool
		want []AptSource
	}{
		{
			name: "deb822 with overlays and a snapshot comment",
			deb:  true,
			text: "Types: deb\n# http://snapshot.example/archive\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\n",
			want: []AptSource{{URI: "http://deb.debian.org/debian", Suite: "bookworm"}},
		},
		{
			name: "deb822 disabled and source-only stanzas are skipped",
			deb:  true,
			text: "Types: deb-src\nURIs: http://a/debian\nSuites: trixie\nComponents: main\n\nEnabled: no\nTypes: deb\nURIs: http://b/debian\nSuites: trixie\nComponents: main\n\nTypes: deb\nURIs: http://c/debian\nSuites: trixie\nComponents: contrib main\n",
			want: []AptSource{{URI: "http://c/debian", Suite: "trixie"}},
		},
		{
			name: "one-line with options and comments",
			text: "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.local/debian trixie main contrib\ndeb http://mirror.local/debian trixie-updates main\n",
			want: []AptSource{{URI: "http://mirror.local/debian", Suite: "trixie"}},
		},
		{
			name: "one-line without main",
			text: "deb http://mirror.local/debian trixie contrib\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []AptSource
			if tt.deb {
				got = ParseDeb822(tt.text)
			} else {
				got = ParseOneLine(tt.text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnsureBuildsWhatCannotBePulled runs the real path on this engine: the
// upstream references cannot be pulled (no registry), so Ensure must return
// the locally built equivalents, building them when they are not cached.
func TestEnsureBuildsWhatCannotBePulled(t *testing.T) {
	cli := dockerenv.Require(t)
	ctx := context.Background()
	for _, im := range []Image{Toxiproxy(), Postgres()} {
		t.Run(im.Name, func(t *testing.T) {
			var log strings.Builder
			ref, err := im.Ensure(ctx, cli, "", &log)
			if err != nil {
				t.Fatalf("Ensure: %v\n%s", err, log.String())
			}
			if ref != im.Upstream && ref != im.Local {
				t.Fatalf("Ensure returned %q, want %q or %q", ref, im.Upstream, im.Local)
			}
			if !Present(ctx, cli, ref) {
				t.Fatalf("%s is not in the engine after Ensure", ref)
			}
			t.Log(log.String())
		})
	}
}

func TestEnsureRefusesAnUnknownImageItCannotPull(t *testing.T) {
	cli := dockerenv.Require(t)
	_, err := Toxiproxy().Ensure(context.Background(), cli, "registry.invalid/nothing:here", os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "registry.invalid/nothing:here") {
		t.Fatalf("Ensure of an unpullable custom image: err = %v, want an error naming it", err)
	}
}

// BenchmarkColdBuild builds both images from nothing under throwaway tags
// (the cached ones are left alone) and reports the time against a warm
// Ensure, which finds them cached, measured in the same run.
func BenchmarkColdBuild(b *testing.B) {
	cli := dockerenv.Require(b)
	ctx := context.Background()
	for _, im := range []Image{Toxiproxy(), Postgres()} {
		b.Run(im.Name, func(b *testing.B) {
			var cold, warm time.Duration
			for i := range b.N {
				tag := fmt.Sprintf("contested.local/%s:bench-%d-%d", im.Name, os.Getpid(), i)
				start := time.Now()
				if err := im.build(ctx, cli, tag, io.Discard); err != nil {
					b.Fatal(err)
				}
				cold += time.Since(start)
				cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
				start = time.Now()
				if _, err := im.Ensure(ctx, cli, "", io.Discard); err != nil {
					b.Fatal(err)
				}
				warm += time.Since(start)
			}
			b.ReportMetric(cold.Seconds()/float64(b.N), "cold-s/op")
			b.ReportMetric(warm.Seconds()*1000/float64(b.N), "warm-ms/op")
			b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
		})
	}
}
