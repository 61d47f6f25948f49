package defects_test

import (
	"testing"

	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// TestMain shares one fault layer among the planted runs and tears it down.
func TestMain(m *testing.M) { faulttest.Main(m) }
