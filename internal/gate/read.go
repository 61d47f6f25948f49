package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/contested/contested/faultrecord"
	"github.com/contested/contested/internal/faultdir"
)

// ReadRecords reads the valid records of the fault directory dir, oldest armed first, with the
// gate's loader: no symbolic link is followed (the directory, its results root and each file),
// every file is opened non-blocking and must be regular (a FIFO or a device is never waited on
// or read), and a file over the record size cap is refused before it is read. Every *.json
// that is not a valid record (the report excepted) is listed in unreadable with the reason, as
// phase 2 would list it. A missing directory holds no records; a directory that cannot be
// opened (a file, a link) is an error wrapping [faultdir.ErrUnreadable].
func ReadRecords(dir string) (records []faultrecord.Record, unreadable []Unreadable, err error) {
	if !faultdir.Is(dir) {
		return nil, nil, fmt.Errorf("read records in %s: %w", dir, faultdir.ErrNotFaultDir)
	}
	d, missing, err := openFaultDir(dir)
	if missing {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read records in %s: %w: %w", dir, faultdir.ErrUnreadable, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("read records in %s: %w: %w", dir, faultdir.ErrUnreadable, err)
	}
	type named struct {
		file string
		rec  faultrecord.Record
	}
	var got []named
	var buf []byte
	for _, e := range entries {
		name := e.Name()
		if faultdir.Classify(name) != faultdir.KindRecord {
			continue
		}
		if t := e.Type(); t != 0 {
			unreadable = append(unreadable, Unreadable{File: name, Reason: notARecord(t)})
			continue
		}
		data, _, err := d.ReadFile(name, buf, faultrecord.MaxRecordSize)
		buf = data[:0]
		if err != nil {
			unreadable = append(unreadable, Unreadable{File: name, Reason: err.Error()})
			continue
		}
		var r faultrecord.Record
		if err := faultrecord.ParseRecordInto(data, &r); err != nil {
			unreadable = append(unreadable, Unreadable{File: name, Reason: strings.TrimPrefix(err.Error(), faultrecord.ErrInvalidRecord.Error()+": ")})
			continue
		}
		got = append(got, named{name, r})
	}
	slices.SortFunc(got, func(a, b named) int {
		if c := a.rec.ArmedAt.Compare(b.rec.ArmedAt); c != 0 {
			return c
		}
		return strings.Compare(a.file, b.file)
	})
	for _, n := range got {
		records = append(records, n.rec)
	}
	slices.SortFunc(unreadable, func(a, b Unreadable) int { return strings.Compare(a.File, b.File) })
	return records, unreadable, nil
}
