package snapshot

import (
	"io"
	"os"
	"sync"

	"director/errcode"
)

// Restore spends most of its time in the kernel creating files (perf on a
// 150 MB tree: ext4_create and its inode allocator), not in decompressing or
// hashing, and one goroutine creating files leaves the second core idle.
// writerSink hands small files to a few writer goroutines: the reading
// goroutine copies each small file's content into a pooled buffer (hashing it
// on the way, as before) and queues it; a writer creates and writes it.
// Directories, symlinks and large files stay on the reading goroutine, so a
// directory always exists before any file queued for it, and memory stays
// bounded by the buffer pool (writerBuffers × smallFileMax).
type writerSink struct {
	main  *rootSink // directories, symlinks, large files
	root  *os.Root
	jobs  chan writeJob
	free  chan []byte // the buffer pool; a receive waits for a writer to finish
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error // the first error of a writer
	close sync.Once
}

const (
	smallFileMax  = 256 << 10
	writerBuffers = 16
)

type writeJob struct {
	f   *File
	buf []byte
}

func newWriterSink(root *os.Root, writers int) *writerSink {
	s := &writerSink{
		main: newRootSink(root, newOpenBudget()),
		root: root,
		jobs: make(chan writeJob, writerBuffers),
		free: make(chan []byte, writerBuffers),
	}
	for range writerBuffers {
		s.free <- nil // allocated on first use
	}
	for range writers {
		s.wg.Add(1)
		go s.write()
	}
	return s
}

// write runs on a writer goroutine until the jobs channel closes. After the
// first failure it only drains the queue, so the reader never blocks on it.
func (s *writerSink) write() {
	defer s.wg.Done()
	own := newRootSink(s.root, s.main.opens) // its own cache of open directories, the same budget
	defer own.close()
	for j := range s.jobs {
		if s.failed() == nil {
			if err := writeWhole(own, j.f, j.buf); err != nil {
				s.fail(err)
			}
		}
		s.free <- j.buf[:0]
	}
}

func writeWhole(out *rootSink, f *File, b []byte) error {
	w, err := out.create(f)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *writerSink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *writerSink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// bound bounds the directories the sink and its writers open together.
// The writers start before it, but open nothing before a file is queued.
func (s *writerSink) bound(entries int) { s.main.bound(entries) }

func (s *writerSink) mkdir(f *File) error {
	if err := s.failed(); err != nil {
		return err
	}
	return s.main.mkdir(f)
}

func (s *writerSink) symlink(f *File) error {
	if err := s.failed(); err != nil {
		return err
	}
	return s.main.symlink(f)
}

func (s *writerSink) create(f *File) (io.WriteCloser, error) {
	if err := s.failed(); err != nil {
		return nil, err
	}
	if f.Size > smallFileMax {
		return s.main.create(f)
	}
	buf := <-s.free
	if buf == nil {
		buf = make([]byte, 0, smallFileMax)
	}
	return &queuedFile{s: s, f: f, buf: buf}, nil
}

// wait stops the writers once they have written everything queued, closes
// every directory the sink holds open and returns the first error of a
// writer. The caller must call it before it removes or renames the tree.
func (s *writerSink) wait() error {
	s.close.Do(func() {
		close(s.jobs)
		s.wg.Wait()
		s.main.close()
	})
	return s.failed()
}

// queuedFile collects a small file's content and queues it on Close.
type queuedFile struct {
	s   *writerSink
	f   *File
	buf []byte
}

func (q *queuedFile) Write(p []byte) (int, error) {
	if len(q.buf)+len(p) > cap(q.buf) {
		// The reader checks each entry's size against the manifest
		// before it copies, so this is a bug, not bad input.
		return 0, errcode.New(errcode.Internal, "%q is larger than the %d bytes queued for it", q.f.Path, cap(q.buf))
	}
	q.buf = append(q.buf, p...)
	return len(p), nil
}

func (q *queuedFile) Close() error {
	q.s.jobs <- writeJob{f: q.f, buf: q.buf}
	return q.s.failed()
}

// restoreWriters is how many goroutines create small files during a restore.
const restoreWriters = 2
