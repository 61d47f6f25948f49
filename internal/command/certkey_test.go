package command

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contested/contested/internal/signkey"
)

// TestCertkeyMakesOnePairOutsideTheModule: a pair in a new directory, its
// public line printed with where it goes; no directory, one inside the
// module, or a pair already there are bad input, and the key is kept.
func TestCertkeyMakesOnePairOutsideTheModule(t *testing.T) {
	module := t.TempDir()
	if err := os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "keys")
	var out bytes.Buffer
	if err := Certkey(CertkeyOptions{Dir: dir, Module: module, Out: &out}); err != nil {
		t.Fatal(err)
	}
	pub, _ := os.ReadFile(filepath.Join(dir, signkey.PublicFile))
	if !strings.Contains(out.String(), "trust = [\""+strings.TrimSpace(string(pub))+"\"]") || !strings.Contains(out.String(), "CONTESTED_SIGNING_KEY=") {
		t.Errorf("output:\n%s\nwant the public line as [reuse] trust takes it, and CONTESTED_SIGNING_KEY", out.String())
	}
	for name, opts := range map[string]CertkeyOptions{
		"no directory":         {Module: module},
		"inside the module":    {Dir: filepath.Join(module, "keys"), Module: module},
		"a pair already there": {Dir: dir, Module: module},
	} {
		if err := Certkey(CertkeyOptions{Dir: opts.Dir, Module: opts.Module, Out: &out}); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v; want exit 2", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(module, "keys")); err == nil {
		t.Error("a key was written inside the module")
	}
	if again, _ := os.ReadFile(filepath.Join(dir, signkey.PublicFile)); !bytes.Equal(again, pub) {
		t.Error("the pair was replaced")
	}
}
