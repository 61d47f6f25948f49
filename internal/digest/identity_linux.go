//go:build linux

package digest

import (
	"io/fs"
	"syscall"
)

// sysIdentity is a file's change time and inode, where the system has them.
func sysIdentity(fi fs.FileInfo) (int64, uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ctim.Sec*1e9 + st.Ctim.Nsec, uint64(st.Ino)
}
