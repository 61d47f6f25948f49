package leasetable_test

import (
	"testing"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"lease-holder": holderProcess})
	contested.Main(m)
}
