package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"dshmem/events"
)

// logPauseEnv names a point of the log's writes at which the process
// stops, for crash tests that kill a real `dshmem serve` or `dshmem
// ingest` there: "torn:N" (the Nth write to a segment writes half its
// bytes), "synced:N" (the Nth fsync of a segment completes, before any
// caller is told). At that point the process prints "READY torn" or
// "READY synced" on stderr and blocks until it is killed. Unset, the log
// writes through the operating system unchanged.
const logPauseEnv = "DSHMEM_TEST_LOG_PAUSE"

// logPauseFS returns the log's file system for the crash hook, or nil
// (the default) without it.
func logPauseFS(stderr io.Writer) events.FS {
	want := os.Getenv(logPauseEnv)
	if want == "" {
		return nil
	}
	mode, nth := want, 1
	if i := strings.LastIndexByte(want, ':'); i > 0 {
		fmt.Sscanf(want[i+1:], "%d", &nth)
		mode = want[:i]
	}
	return &pauseFS{mode: mode, at: int32(nth), stderr: stderr}
}

type pauseFS struct {
	events.OSFS
	mode   string
	at     int32
	n      atomic.Int32
	stderr io.Writer
}

func (p *pauseFS) OpenFile(name string, flag int, perm os.FileMode) (events.File, error) {
	f, err := p.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".jsonl.zst") {
		return f, err
	}
	return &pauseFile{File: f, fs: p}, nil
}

// stop says where the process is and blocks until it is killed.
func (p *pauseFS) stop() {
	fmt.Fprintf(p.stderr, "READY %s\n", p.mode)
	for {
		time.Sleep(time.Hour)
	}
}

type pauseFile struct {
	events.File
	fs *pauseFS
}

func (f *pauseFile) Write(b []byte) (int, error) {
	if f.fs.mode == "torn" && len(b) > 1 && f.fs.n.Add(1) == f.fs.at {
		f.File.Write(b[:len(b)/2])
		f.fs.stop()
	}
	return f.File.Write(b)
}

func (f *pauseFile) Sync() error {
	err := f.File.Sync()
	if f.fs.mode == "synced" && f.fs.n.Add(1) == f.fs.at {
		f.fs.stop()
	}
	return err
}
