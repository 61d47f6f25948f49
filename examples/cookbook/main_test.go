package cookbook_test

import (
	"testing"

	"github.com/contested/contested/contested"
)

func TestMain(m *testing.M) { contested.Main(m) }
