package reuse

import (
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
)

func TestMain(m *testing.M) { e2etest.Main(m) }
