package certify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/contested/contested/internal/atomicfile"
)

// Store keeps certificates.
type Store interface {
	// Write stores certs, each replacing the one for the same inputs, and
	// keeps the newest Keep of each kind, key and branch.
	Write(ctx context.Context, certs []Certificate) error
	// Read returns the module's certificates that verify, and a line for
	// each it ignored. keys are the digests the caller may reuse: a store
	// reads those and the newest of each kind and key, no more.
	Read(ctx context.Context, module string, digests []string) (*Set, error)
}

// DirName is the local store's directory, relative to the results
// directory, beside the flake history.
const DirName = "history/certificates"

// maxFile caps a certificate file or row: a real one is a few kilobytes,
// a package's record of what its tests touched some more.
const maxFile = 1 << 20

// maxEntries caps how many files or rows a store reads.
const maxEntries = 20000

// File is the local store: one file per certificate under the results
// directory, written atomically, read without following a link and
// without waiting on a FIFO, and only as what Trust verifies.
type File struct {
	root  string
	trust *Trust
}

var _ Store = (*File)(nil)

// NewFile is the local store of the results directory root.
func NewFile(root string, trust *Trust) *File { return &File{root: root, trust: trust} }

// fileName is a certificate's file: its kind, a hash of its key, and a
// hash of what it certifies and who vouches for it, so that no field
// names a path.
func fileName(c Certificate) string {
	h := sha256.New()
	b, _ := json.Marshal([]any{c.Digest, c.Inputs, c.Packages, c.Signer})
	h.Write(b)
	return keyPrefix(c.Kind, c.Key) + hex.EncodeToString(h.Sum(nil)[:12]) + ".json"
}

func keyPrefix(kind, k string) string {
	h := sha256.Sum256([]byte(k))
	return kind + "-" + hex.EncodeToString(h[:12]) + "-"
}

// Write stores each certificate in its own file, atomically, then removes
// the files of each kind and key written that an earlier contested wrote,
// and the certificates beyond the newest Keep of their branch. A file that
// does not verify (another user's, damaged) is left where it is.
func (f *File) Write(ctx context.Context, certs []Certificate) error {
	if len(certs) == 0 {
		return nil
	}
	r, err := atomicfile.MakeRoot(f.root)
	if err != nil {
		return fmt.Errorf("write the certificates: %w", err)
	}
	for _, c := range certs {
		if err := r.WriteJSON(path.Join(DirName, fileName(c)), c); err != nil {
			return fmt.Errorf("write the certificates: %w", err)
		}
	}
	if err := f.prune(r, certs); err != nil {
		return fmt.Errorf("write the certificates: %w", err)
	}
	return nil
}

// prune removes, for each kind and key in certs, its files of an earlier
// format and its verified certificates beyond the newest Keep of their
// branch.
func (f *File) prune(r *atomicfile.Root, certs []Certificate) error {
	d, err := r.OpenDir(DirName)
	if err != nil {
		return err
	}
	defer d.Close()
	var written []string
	for _, c := range certs {
		written = append(written, strings.TrimSuffix(keyPrefix(c.Kind, c.Key), "-"))
	}
	entries, err := d.ReadDir(-1)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var buf []byte
	for _, e := range entries {
		name := e.Name()
		if !slices.ContainsFunc(written, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		b, _, err := d.ReadFile(name, buf, maxFile)
		if err != nil {
			continue
		}
		var head struct{ Schema string }
		if json.Unmarshal(b, &head) == nil && head.Schema == firstSchema {
			if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	// A directory is listed once per open: list it again afresh.
	d2, err := r.OpenDir(DirName)
	if err != nil {
		return err
	}
	defer d2.Close()
	s, err := f.readDir(d2, certs[0].Module)
	if err != nil {
		return err
	}
	for _, c := range certs {
		for _, old := range expired(s.byKey[key(c.Kind, c.Key)]) {
			if err := d.Remove(fileName(old)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Read reads every certificate file; one that cannot be read or does not
// verify is ignored with a line naming it and why.
func (f *File) Read(ctx context.Context, module string, _ []string) (*Set, error) {
	s := &Set{}
	r, err := atomicfile.OpenRoot(f.root)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read the certificates: %w", err)
	}
	d, err := r.OpenDir(DirName)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read the certificates: %w", err)
	}
	defer d.Close()
	s, err = f.readDir(d, module)
	if err != nil {
		return s, fmt.Errorf("read the certificates: %w", err)
	}
	return s, nil
}

// readDir reads the certificate files in d, at most maxEntries of them.
func (f *File) readDir(d *atomicfile.Dir, module string) (*Set, error) {
	s := &Set{}
	entries, err := d.ReadDir(-1)
	if err != nil && !errors.Is(err, io.EOF) {
		return s, err
	}
	var buf []byte
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		if n++; n > maxEntries {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificates under %s beyond the first %d ignored; what they certified runs", DirName, maxEntries))
			break
		}
		where := path.Join(DirName, name)
		b, _, err := d.ReadFile(name, buf, maxFile)
		if err != nil {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s ignored: %v; what it certified runs", where, err))
			continue
		}
		buf = b[:0]
		c, err := f.trust.Open(b, module)
		if err != nil {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s ignored: %v; what it certified runs", where, err))
			continue
		}
		if name != fileName(c) {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s ignored: it certifies %s %s, whose file is another; what it certified runs", where, c.Kind, c.Key))
			continue
		}
		s.add(c)
	}
	return s, nil
}
