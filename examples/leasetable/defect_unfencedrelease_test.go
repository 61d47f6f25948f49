//go:build contested_defect_unfencedrelease

package leasetable_test

import "github.com/contested/contested/internal/faultlayer/lease"

// The planted defect for the oracle tests only: every release the contract makes goes
// through the table's unfenced release (see internal/faultlayer/lease/defect_unfencedrelease.go).
func init() { release = (*lease.Table).ReleaseUnfenced }
