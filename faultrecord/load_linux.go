package faultrecord

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// dirHandle reads record files relative to an open directory. On Linux it uses openat on the
// directory's descriptor and raw open/fstat/read/close: with 100k files the syscalls are the
// cost, and os.Open adds poller registration and a full path walk per file.
type dirHandle struct{ fd int }

func openDir(path string) (dirHandle, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return dirHandle{}, err
	}
	return dirHandle{fd: fd}, nil
}

func (h dirHandle) close() error { return syscall.Close(h.fd) }

// readFile reads name into buf (reusing its capacity) and returns the bytes and the mtime taken
// from the same open file. O_NONBLOCK keeps a FIFO that happens to be named *.json from
// blocking the verification; it has no effect on regular files.
func (h dirHandle) readFile(name string, buf []byte) ([]byte, time.Time, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Openat(h.fd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	})
	if err != nil {
		return buf, time.Time{}, fmt.Errorf("open: %w", err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if _, err := retryEINTR(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		return buf, time.Time{}, fmt.Errorf("stat: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf, time.Time{}, errors.New("not a regular file")
	}
	if st.Size > maxRecordSize {
		return buf, time.Time{}, fmt.Errorf("file of %d bytes is larger than any record (%d)", st.Size, maxRecordSize)
	}
	if need := int(st.Size) + 512; cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxRecordSize {
				return buf, time.Time{}, fmt.Errorf("file grew past %d bytes while read", maxRecordSize)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := retryEINTR(func() (int, error) { return syscall.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return buf, time.Time{}, fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) == st.Size {
			break // records are immutable once renamed: skip the read that would say EOF
		}
	}
	return buf, time.Unix(st.Mtim.Unix()), nil
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}
