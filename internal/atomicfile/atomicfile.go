// Package atomicfile writes a file so that a reader sees either the old
// content or the new, never half of it: a temporary file in the same
// directory, fsynced, then renamed over the target.
package atomicfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/contested/contested/internal/secret"
)

// Write writes data to path, creating its directory if needed. Every
// secret in data is masked first (secret.Scrub): whatever an artifact
// holds, a password never reaches the disk through here.
func Write(path string, data []byte) error {
	data = secret.Scrub(data)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	done = true
	return nil
}

// WriteJSON writes v as indented JSON with a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return Write(path, append(b, '\n'))
}
