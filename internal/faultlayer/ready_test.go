package faultlayer

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/images"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/runid"
)

// TestReadinessFollowsTheLog starts the test-plane Postgres image the way
// the containers provider does, and checks what the log-driven readiness
// makes of it: a container started right is ready with a usable DSN; one
// that exits during start-up (no password) is reported as exited, with the
// reason from its own log, as soon as it exits instead of after the
// start-up deadline.
func TestReadinessFollowsTheLog(t *testing.T) {
	cfg := requireContainers(t)
	cli, err := dockerenv.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ref, err := images.Postgres().Ensure(ctx, cli, cfg.PostgresImage, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	run := runid.New(time.Now())
	t.Cleanup(func() { reap.Sweep(context.Background(), cli, reap.Mine(run), io.Discard) })
	tests := []struct {
		name     string
		env      map[string]string
		wantErr  string // "" when it must come up
		exitedIs bool
	}{
		{"configured", map[string]string{"POSTGRES_PASSWORD": "p1", "POSTGRES_DB": testPlaneDB}, "", false},
		{"exits during start-up", map[string]string{"POSTGRES_DB": testPlaneDB}, "POSTGRES_PASSWORD is not set", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := pgLogReady{docker: cli, user: testPlaneUser, password: tt.env["POSTGRES_PASSWORD"], db: testPlaneDB,
				readyLine: images.ReadyLine(ctx, cli, ref), timeout: startupDeadline}
			c, err := testcontainers.Run(ctx, ref,
				testcontainers.WithEnv(tt.env),
				testcontainers.WithLabels(reap.Labels(run, rolePrefix+"postgres")),
				loopbackOnly("5432/tcp"),
				testcontainers.WithWaitStrategy(ready),
			)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("a correctly started Postgres was not ready: %v", err)
				}
				return
			}
			if c == nil && err == nil {
				t.Fatal("no container and no error")
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one that quotes the container's own reason %q", err, tt.wantErr)
			}
			if tt.exitedIs && !errors.Is(err, errExited) {
				t.Errorf("err = %v, want errExited", err)
			}
		})
	}
}
