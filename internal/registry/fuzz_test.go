package registry

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic (the tree builder walks
// go-toml's unstable AST by hand) and that every problem it reports is a
// positioned ErrInvalid naming the file.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.toml")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := Parse("fuzz.toml", data)
		if err == nil {
			if reg == nil || len(reg.Surfaces) == 0 {
				t.Fatalf("a registry without surfaces loaded: %+v", reg)
			}
			return
		}
		if reg != nil {
			t.Fatal("registry returned along with an error")
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 || !errors.Is(err, ErrInvalid) {
			t.Fatalf("want a non-empty ErrorList matching ErrInvalid, got %T %v", err, err)
		}
		for _, e := range list {
			if e.File != "fuzz.toml" || e.Line < 0 || e.Column < 0 {
				t.Fatalf("badly positioned problem: %+v", e)
			}
		}
	})
}
