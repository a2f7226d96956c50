package snapshot

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

const benchTreeSize = 32 << 20

func benchTree(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "profile")
	genTree(b, dir, benchTreeSize, 7)
	return dir
}

func BenchmarkCreate(b *testing.B) {
	dir := benchTree(b)
	b.SetBytes(benchTreeSize)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Create(context.Background(), dir, io.Discard, CreateOptions{Excludes: []string{}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	_, arc := createArchive(b, benchTree(b), CreateOptions{})
	b.SetBytes(benchTreeSize)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Verify(context.Background(), bytes.NewReader(arc), ExtractOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestore(b *testing.B) {
	_, arc := createArchive(b, benchTree(b), CreateOptions{})
	dst := filepath.Join(b.TempDir(), "restored")
	b.SetBytes(benchTreeSize)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Restore(context.Background(), bytes.NewReader(arc), dst, RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	os.RemoveAll(dst)
}
