package faultrecord

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// validJSON is a complete record as docs/reference/records.md shows it.
const validJSON = `{
  "schema": "contested/faultrecord@1",
  "run_id": "20261129T101500Z-4f2a",
  "test": "TestStoreContract/reset",
  "package": "example.com/you/service/store",
  "surface": "ledger.store",
  "class": "store",
  "leg": "reset",
  "seed": 42,
  "replay": "CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset$' -count=1",
  "armed": true,
  "armed_at": "2026-11-29T10:15:01.123456Z",
  "fired": true,
  "fired_at": "2026-11-29T10:15:01.200000Z",
  "evidence": {"injector": "proxy ledger-store-31002 reset_peer; 2 conns reset", "victim": "pgconn: ECONNRESET x2"}
}`

// edit returns validJSON with one top-level field set (or removed when v is nil).
func edit(t *testing.T, key string, v any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validJSON), &m); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		delete(m, key)
	} else {
		m[key] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseRecord(t *testing.T) {
	want := Record{
		Schema: Schema, RunID: "20261129T101500Z-4f2a", Test: "TestStoreContract/reset",
		Package: "example.com/you/service/store", Surface: "ledger.store", Class: "store", Leg: "reset",
		Seed: 42, Replay: "CONTESTED_SEED=42 go test ./store -run '^TestStoreContract$/^reset$' -count=1",
		Armed: true, ArmedAt: time.Date(2026, 11, 29, 10, 15, 1, 123456000, time.UTC),
		Fired: true, FiredAt: time.Date(2026, 11, 29, 10, 15, 1, 200000000, time.UTC),
		Evidence: Evidence{Injector: "proxy ledger-store-31002 reset_peer; 2 conns reset", Victim: "pgconn: ECONNRESET x2"},
	}
	tests := []struct {
		name    string
		data    string
		want    *Record // nil: no check beyond the error
		wantErr string  // empty: valid
	}{
		{name: "design example", data: validJSON, want: &want},
		{name: "unknown fields are ignored", data: edit(t, "injector_version", map[string]any{"v": 3})},
		{name: "seed beyond 2^53 keeps every bit", data: strings.Replace(validJSON, `"seed": 42`, `"seed": 9007199254740993`, 1),
			want: func() *Record { r := want; r.Seed = 9007199254740993; return &r }()},
		{name: "unfired without fired_at", data: edit(t, "fired", false)},
		{name: "another schema", data: edit(t, "schema", "contested/faultrecord@2"), wantErr: `schema "contested/faultrecord@2"`},
		{name: "no schema", data: edit(t, "schema", nil), wantErr: `schema ""`},
		{name: "no surface", data: edit(t, "surface", nil), wantErr: "no surface"},
		{name: "empty surface", data: edit(t, "surface", ""), wantErr: "no surface"},
		{name: "no class", data: edit(t, "class", nil), wantErr: "no class"},
		{name: "no leg", data: edit(t, "leg", nil), wantErr: "no leg"},
		{name: "no test", data: edit(t, "test", nil), wantErr: "no test"},
		{name: "not armed", data: edit(t, "armed", false), wantErr: "armed is false"},
		{name: "truncated", data: validJSON[:len(validJSON)/2], wantErr: "unexpected end of JSON input"},
		{name: "trailing garbage", data: validJSON + "}", wantErr: "parse"},
		{name: "two records appended", data: validJSON + validJSON, wantErr: "parse"},
		{name: "empty file", data: "", wantErr: "empty file"},
		{name: "seed as a string", data: edit(t, "seed", "42"), wantErr: "parse"},
		{name: "a schedule is read", data: edit(t, "schedule", map[string]any{"digest": "0123456789abcdef", "summary": "reset level 1: #1 @93 downstream", "window": 2, "timing": "schedule"}),
			want: func() *Record {
				r := want
				r.Schedule = &Schedule{Digest: "0123456789abcdef", Summary: "reset level 1: #1 @93 downstream", Window: 2, Timing: "schedule"}
				return &r
			}()},
		{name: "a record without a schedule is still @1", data: validJSON, want: &want},
		{name: "a schedule that is not an object", data: edit(t, "schedule", "reset"), wantErr: "field schedule"},
		{name: "a schedule window that is not a number", data: edit(t, "schedule", map[string]any{"window": "1"}), wantErr: "field schedule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRecord([]byte(tc.data))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseRecord: %v", err)
				}
				if tc.want != nil {
					if diff := cmp.Diff(*tc.want, got, cmpopts.IgnoreUnexported(Record{}, Evidence{})); diff != "" {
						t.Errorf("record (-want +got):\n%s", diff)
					}
				}
				return
			}
			if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseRecord error = %v, want ErrInvalidRecord containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestParseRecordReuse guards the verification hot path, which decodes into one reused value:
// a field present in one file must not leak into the next file that lacks it.
func TestParseRecordReuse(t *testing.T) {
	var r Record
	if err := ParseRecordInto([]byte(validJSON), &r); err != nil {
		t.Fatal(err)
	}
	if err := ParseRecordInto([]byte(edit(t, "surface", nil)), &r); err == nil {
		t.Errorf("second record without a surface was accepted with surface %q from the first", r.Surface)
	}
}

func TestRecordJSONNames(t *testing.T) {
	r := Record{Schema: Schema, Test: "T", Surface: "s", Class: "c", Leg: "l", Armed: true, Fired: false}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "run_id", "test", "package", "surface", "class", "leg", "seed", "replay", "armed", "armed_at", "fired", "evidence"} {
		if _, ok := m[k]; !ok {
			t.Errorf("field %q missing from %s", k, b)
		}
	}
	if _, ok := m["fired_at"]; ok {
		t.Errorf("fired_at present on an unfired record: %s", b)
	}
	if len(m) != 13 {
		t.Errorf("record has %d fields, want 13: %s", len(m), b)
	}
	var ev map[string]string
	if err := json.Unmarshal(m["evidence"], &ev); err != nil || len(ev) != 2 {
		t.Errorf("evidence = %s (%v), want injector and victim", m["evidence"], err)
	}
}

// TestTestdataRecordsParse keeps the fixtures honest: every good record parses, and every
// deliberately bad one fails for the reason its set is named after.
func TestTestdataRecordsParse(t *testing.T) {
	bad := map[string]string{
		"store-reset-truncated.json": "unexpected end of JSON input",
		"other-schema.json":          "schema",
		"no-surface.json":            "no surface",
	}
	files, err := filepath.Glob(filepath.Join("testdata", "records", "*", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("glob testdata: %v, %d files", err, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, perr := ParseRecord(data)
		reason, isBad := bad[filepath.Base(f)]
		switch {
		case isBad && (perr == nil || !strings.Contains(perr.Error(), reason)):
			t.Errorf("%s: err = %v, want one containing %q", f, perr, reason)
		case !isBad && perr != nil:
			t.Errorf("%s: %v", f, perr)
		}
	}
}
