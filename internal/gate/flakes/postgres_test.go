package flakes

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

func TestMain(m *testing.M) { faulttest.Main(m) }

// The team's store in a real Postgres: concurrent first runs migrate and
// append without losing a line, and the trend reads the same as the
// file's.
func TestPostgresConcurrentWriters(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	p, err := OpenPostgres(ctx, l.PostgresDSN, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.pool.Exec(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
		t.Fatal(err)
	}
	const writers = 6
	batch := runs(20, 4, 9, 17)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			w, err := OpenPostgres(ctx, l.PostgresDSN, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer w.Close()
			if err := w.Append(ctx, batch); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := p.Read(ctx)
	if err != nil || len(got) != writers*len(batch) {
		t.Fatalf("read %d outcomes, %v; want %d", len(got), err, writers*len(batch))
	}
	// Each append lands in one piece, in its order, whatever ran beside it.
	for k := range writers {
		s := Summarize(got[k*len(batch):(k+1)*len(batch)], "TestC", 20)
		if len(s.Runs) != 20 || s.Failed != 3 || s.FirstFailure == nil || s.FirstFailure.Commit != "c04" {
			t.Errorf("append %d read back from Postgres: %d runs, %d failed, first %+v; want 20, 3, c04 (interleaved with another append?)", k+1, len(s.Runs), s.Failed, s.FirstFailure)
		}
	}
}

func TestPostgresGuardAndBadDSN(t *testing.T) {
	ctx := context.Background()
	_, err := OpenPostgres(ctx, "postgres://u:hunter2@127.0.0.1:1/stock", []string{"stock"})
	if !errors.Is(err, ErrGuard) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a canonical database: %v; want ErrGuard without the password", err)
	}
	for _, tt := range []struct{ name, dsn, pgdatabase string }{
		{"URL path template1", "postgres://u:hunter2@127.0.0.1:1/template1", ""},
		{"URL path postgres", "postgres://u:hunter2@127.0.0.1:1/postgres", ""},
		{"keyword dbname=template0", "host=127.0.0.1 port=1 user=u password=hunter2 dbname=template0", ""},
		{"query dbname=template1", "postgres://u:hunter2@127.0.0.1:1/history?dbname=template1", ""},
		{"no database", "postgres://u:hunter2@127.0.0.1:1", ""},
		{"PGDATABASE=template1", "postgres://u:hunter2@127.0.0.1:1/", "template1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PGDATABASE", tt.pgdatabase)
			_, err := OpenPostgres(ctx, tt.dsn, nil)
			if !errors.Is(err, ErrGuard) || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "CONTESTED_HISTORY_DSN") {
				t.Errorf("OpenPostgres = %v; want ErrGuard naming CONTESTED_HISTORY_DSN, without the password", err)
			}
		})
	}
	_, err = OpenPostgres(ctx, "postgres://u:hunter2@127.0.0.1:notaport/db", nil)
	if !errors.Is(err, ErrBadDSN) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a DSN that does not parse: %v; want ErrBadDSN without the password", err)
	}
}
