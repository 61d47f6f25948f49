package faultrecord

import (
	"errors"
	"testing"

	"github.com/contested/contested/internal/atomicfile"
)

func TestNewRecorderRefusesAPlaceThatIsNeverAResultsDir(t *testing.T) {
	for _, root := range []string{"/", "/etc"} {
		if _, err := NewRecorder("p", WithResultsDir(root), WithRunID("r")); !errors.Is(err, atomicfile.ErrBadResultsDir) {
			t.Errorf("NewRecorder(%s) = %v, want ErrBadResultsDir", root, err)
		}
	}
}
