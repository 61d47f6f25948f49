package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/secret"
)

// ManifestName is the shard manifest's file name, beside validate.json in
// the shard's results directory.
const ManifestName = "shard.json"

// ManifestSchema is the "schema" of shard.json.
const ManifestSchema = "contested/shard@1"

// maxManifestSize bounds the manifest read: a digest line per record.
const maxManifestSize = 64 << 20

// Manifest is what a shard wrote: which share of the battery it owned,
// under which stamp, and a digest of every record it kept. It is written
// once, after the shard's own verification, and never changed.
type Manifest struct {
	Schema string `json:"schema"`
	Shard  Spec   `json:"shard"`
	// SharedRunID is the run every shard of one battery belongs to, and
	// SharedRunIDFrom where it came from (CONTESTED_RUN_ID, or the CI
	// variables it was derived from).
	SharedRunID     string `json:"shared_run_id"`
	SharedRunIDFrom string `json:"shared_run_id_from"`
	// RunID is this shard's own run id (the shared one and the shard's
	// tag); its records carry it, with a layer's suffix when the shard
	// started a layer of its own.
	RunID string `json:"run_id"`
	// Module is the module path (go.mod) the battery ran in.
	Module string `json:"module"`
	// Plan is the digest of the split this shard computed: every shard of
	// one battery computes the same.
	Plan PlanRef `json:"plan"`
	// Owned is this shard's share, package by package.
	Owned []Owned `json:"owned"`
	// Stamp is the gate stamp the shard wrote before its battery; its
	// records postdate it.
	Stamp Stamp `json:"stamp"`
	// Certified says the shard's own paired verification certified its
	// records (phases 4 and 5 are the union's: see gate.Options.Shard),
	// which consumed the stamp; BatteryOK that its tests passed.
	Certified bool `json:"certified"`
	BatteryOK bool `json:"battery_ok"`
	// Records is how many record files the shard kept, Digest the sha256
	// of Files (one "name sha256" line each, in name order), and Files
	// each record's own sha256.
	// Battery is the sha256 of the shard's test outcomes as validate.json
	// holds them (its "battery"), which the merge judges the union by.
	Battery   string       `json:"battery"`
	Records   int          `json:"records"`
	Digest    string       `json:"digest"`
	Files     []FileDigest `json:"files"`
	WrittenAt time.Time    `json:"written_at"`
}

// PlanRef names the split a shard used.
type PlanRef struct {
	Digest   string `json:"digest"`
	Balanced bool   `json:"balanced"`
	// Timings is the timing file that balanced it, when one did.
	Timings string `json:"timings,omitempty"`
}

// Stamp is a gate stamp as its shard wrote it.
type Stamp struct {
	RunID     string    `json:"run_id"`
	WrittenAt time.Time `json:"written_at"`
	// ModTime is the stamp file's mtime, the reference of phase 1.
	ModTime time.Time `json:"mtime"`
	// Digest is the sha256 of the stamp file's content.
	Digest string `json:"digest"`
}

// FileDigest is one record file's sha256.
type FileDigest struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// ErrManifest means a shard manifest is missing, unreadable or not one.
var ErrManifest = errors.New("bad shard manifest")

// ReadStamp reads the gate stamp of the fault directory dir, right after
// the shard wrote it: its run id and time (content), mtime and digest.
func ReadStamp(dir string) (Stamp, error) {
	d, err := openFault(dir)
	if err != nil {
		return Stamp{}, fmt.Errorf("read the gate stamp: %w", err)
	}
	defer d.Close()
	data, mtime, err := d.ReadFile(faultdir.StampName, nil, 64<<10)
	if err != nil {
		return Stamp{}, fmt.Errorf("read the gate stamp: %w", err)
	}
	var content struct {
		RunID     string    `json:"run_id"`
		WrittenAt time.Time `json:"written_at"`
	}
	if err := json.Unmarshal(data, &content); err != nil {
		return Stamp{}, fmt.Errorf("read the gate stamp %s: %w", filepath.Join(dir, faultdir.StampName), err)
	}
	return Stamp{RunID: content.RunID, WrittenAt: content.WrittenAt, ModTime: mtime, Digest: sum(data)}, nil
}

// RecordFile is one record file as found on disk.
type RecordFile struct {
	Name    string
	SHA256  string
	ModTime time.Time
	Data    []byte
}

// ReadRecordFiles reads every record file (*.json but the report) of the
// fault directory dir, in name order, with the gate's loader: no link is
// followed and only regular files are read. A missing directory holds
// none.
func ReadRecordFiles(dir string) ([]RecordFile, error) {
	d, err := openFault(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the records of %s: %w", dir, err)
	}
	defer d.Close()
	var out []RecordFile
	for {
		entries, err := d.ReadDir(1024)
		for _, e := range entries {
			if faultdir.Classify(e.Name()) != faultdir.KindRecord {
				continue
			}
			if e.Type() != 0 {
				return nil, fmt.Errorf("read the records of %s: %s is not a regular file", dir, e.Name())
			}
			data, mtime, err := d.ReadFile(e.Name(), nil, faultrecord.MaxRecordSize)
			if err != nil {
				return nil, fmt.Errorf("read the records of %s: %w", dir, err)
			}
			out = append(out, RecordFile{Name: e.Name(), SHA256: sum(data), ModTime: mtime, Data: data})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the records of %s: %w", dir, err)
		}
	}
	slices.SortFunc(out, func(a, b RecordFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Digests are the files' digests and their digest (see Manifest.Digest).
func Digests(files []RecordFile) ([]FileDigest, string) {
	out := make([]FileDigest, 0, len(files))
	var all strings.Builder
	for _, f := range files {
		out = append(out, FileDigest{Name: f.Name, SHA256: f.SHA256})
		fmt.Fprintf(&all, "%s %s\n", f.Name, f.SHA256)
	}
	return out, sum([]byte(all.String()))
}

// WriteManifest writes m as shard.json in the results directory root,
// atomically.
func WriteManifest(root string, m Manifest) error {
	m.Schema = ManifestSchema
	r, err := atomicfile.MakeRoot(root)
	if err != nil {
		return fmt.Errorf("write the shard manifest: %w", err)
	}
	if err := r.WriteJSON(ManifestName, m); err != nil {
		return fmt.Errorf("write the shard manifest: %w", err)
	}
	return nil
}

// ReadManifest reads shard.json of the shard results directory dir. A
// directory without one is an error wrapping [ErrManifest] and
// fs.ErrNotExist; one that does not parse, or is not a shard manifest,
// wraps ErrManifest alone.
func ReadManifest(dir string) (*Manifest, error) {
	r, err := atomicfile.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrManifest, dir, err)
	}
	var m Manifest
	if err := r.ReadJSON(ManifestName, &m, maxManifestSize); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("%w: %s: schema %q, want %q", ErrManifest, filepath.Join(dir, ManifestName), m.Schema, ManifestSchema)
	}
	return &m, nil
}

// openFault opens the fault directory dir under its results root,
// confined (no link followed).
func openFault(dir string) (*atomicfile.Dir, error) {
	root, err := atomicfile.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	return root.OpenDir(filepath.Base(dir))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// BatteryDigest is the digest of a battery's outcomes (Manifest.Battery).
// The outcomes are digested as validate.json keeps them: with every secret
// masked (artifacts are scrubbed as they are written) and read back.
func BatteryDigest(r *battery.Result) string {
	b, _ := json.Marshal(r)
	var back battery.Result
	if json.Unmarshal(secret.Scrub(b), &back) == nil {
		b, _ = json.Marshal(&back)
	}
	return sum(b)
}

// validateName is the shard's validate.json, beside its manifest.
const validateName = rundir.ValidateJSON

// readBattery reads the test outcomes of the shard's validate.json.
func readBattery(dir string) (*battery.Result, error) {
	r, err := atomicfile.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	var v struct {
		Battery *battery.Result `json:"battery"`
	}
	if err := r.ReadJSON(validateName, &v, maxManifestSize); err != nil {
		return nil, err
	}
	if v.Battery == nil {
		return nil, fmt.Errorf("%s has no battery", r.Join(validateName))
	}
	return v.Battery, nil
}
