package faultrecord

import (
	"errors"
	"fmt"
	"time"
)

// Schema is the value of the "schema" field of every record this package writes or accepts.
// A record with any other value is unreadable: readers never guess at a format they do not know.
const Schema = "contested/faultrecord@1"

// ErrInvalidRecord means a record does not parse or breaks the schema:
// callers branch on it with [errors.Is].
var ErrInvalidRecord = errors.New("invalid fault record")

// Record is one armed fault, schema contested/faultrecord@1 (docs/reference/records.md).
//
// A leg writes exactly one Record per fault it armed, after it has observed (or failed to
// observe) the fault landing. Fired is true only on observed evidence, never because the
// injector was called. FiredAt is omitted when Fired is false.
type Record struct {
	Schema   string    `json:"schema"`
	RunID    string    `json:"run_id"`
	Test     string    `json:"test"`
	Package  string    `json:"package"`
	Surface  string    `json:"surface"`
	Class    string    `json:"class"`
	Leg      string    `json:"leg"`
	Seed     int64     `json:"seed"`
	Replay   string    `json:"replay"`
	Armed    bool      `json:"armed"`
	ArmedAt  time.Time `json:"armed_at"`
	Fired    bool      `json:"fired"`
	FiredAt  time.Time `json:"fired_at,omitzero"`
	Evidence Evidence  `json:"evidence"`
	// Oracles are the checks the test ran over the faulted run, as its leg
	// reported them. Optional: the gate does not read them; mage contested
	// does, to tell a proven pass from a surface-only one.
	Oracles []OracleRun `json:"oracles,omitempty"`
	// TestFailed says the test had already failed, on its own account (an
	// oracle, an assertion), when its leg wrote the record; a fault that
	// did not fire is reported after this is taken. Optional: the gate
	// does not read it.
	TestFailed bool `json:"test_failed,omitempty"`
	// Schedule is the schedule the leg's seed produced for its faults, as
	// they were armed. Optional: the gate does not read it; mage contested
	// counts distinct schedules across seeds by its digest.
	Schedule *Schedule `json:"schedule,omitempty"`

	_ struct{} // disallow positional literals: fields are added over time
}

// Schedule is the schedule a leg ran its faults by: a short description
// and the digest of its full description. Two seeds whose legs ran the
// same schedule carry the same digest; the seed itself is not part of it.
type Schedule struct {
	// Digest is 16 hex digits of the SHA-256 of the full description.
	Digest string `json:"digest"`
	// Summary describes the schedule, clipped to a few hundred bytes.
	Summary string `json:"summary"`
	// Window is which of the leg's faults this record's is, from 1.
	Window int `json:"window,omitempty"`
	// Timing says who decided when the fault was armed and healed:
	// "schedule" (the leg, on the workload's steps), "held by schedule"
	// (the test armed it, the leg held and healed it) or "test".
	Timing string `json:"timing,omitempty"`
}

// OracleRun is one oracle's pass over a leg's run.
type OracleRun struct {
	Name        string `json:"name"`
	OpsProduced int    `json:"ops_produced"` // operations the run produced for the oracle
	OpsChecked  int    `json:"ops_checked"`  // operations it actually checked; fewer is a partial check
	// Result is "held", "violated" or "unknown" (the oracle could not
	// decide, such as a linearizability check that timed out).
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// Evidence says how firing was observed, from each side (docs/concepts/gate.md).
type Evidence struct {
	// Injector is what the armer saw: proxy state, byte deltas, pg_stat_activity, exit status.
	Injector string `json:"injector"`
	// Victim is what the component under test saw: ECONNRESET, SQLSTATE 53300, EOF, ...
	Victim string `json:"victim"`

	_ struct{} // disallow positional literals
}

// Validate reports why r is not a usable record, or nil. The rules are the readers' rules, so a
// record that Validate accepts is one that the gate reads: the schema matches; test, surface,
// class and leg are set; and the fault was armed (a record exists only for an armed fault).
func (r *Record) Validate() error {
	switch {
	case r.Schema != Schema:
		return fmt.Errorf("%w: schema %q is not %s", ErrInvalidRecord, r.Schema, Schema)
	case r.Surface == "":
		return fmt.Errorf("%w: no surface", ErrInvalidRecord)
	case r.Class == "":
		return fmt.Errorf("%w: no class", ErrInvalidRecord)
	case r.Leg == "":
		return fmt.Errorf("%w: no leg", ErrInvalidRecord)
	case r.Test == "":
		return fmt.Errorf("%w: no test", ErrInvalidRecord)
	case !r.Armed:
		return fmt.Errorf("%w: armed is false (a record is written only for an armed fault)", ErrInvalidRecord)
	}
	return nil
}

// ParseRecord decodes and validates one record file's contents. Unknown fields are ignored so
// that writers can add fields without breaking readers; anything else that is off (not JSON,
// trailing bytes, a field of the wrong type, another schema, a missing identity field) is an
// error wrapping [ErrInvalidRecord]. Keys are matched exactly as the schema spells them.
func ParseRecord(data []byte) (Record, error) {
	var r Record
	if err := ParseRecordInto(data, &r); err != nil {
		return Record{}, err
	}
	return r, nil
}

// MaxRecordSize caps a record file: a larger file is not a record anyone wrote on purpose, and a
// reader refuses it before reading it.
const MaxRecordSize = 4 << 20

// ParseRecordInto is [ParseRecord] into a reused value, for a reader's hot path.
func ParseRecordInto(data []byte, r *Record) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty file", ErrInvalidRecord)
	}
	if err := decodeRecord(data, r); err != nil {
		return fmt.Errorf("%w: parse: %w", ErrInvalidRecord, err)
	}
	return r.Validate()
}
