package storage

import (
	"context"
	"io"
	"testing"

	"director/internal/s3test"
)

// BenchmarkPutGet streams 64 MiB up and back down through each backend
// (`go test -run '^$' -bench PutGet ./storage/`); s3 is a local versitygw,
// supabase the protocol double.
func BenchmarkPutGet(b *testing.B) {
	const size = 64 << 20
	stores := map[string]func(b *testing.B) Store{
		"file": func(b *testing.B) Store { return mustOpen(b, "file://"+b.TempDir(), Options{}) },
		"s3": func(b *testing.B) Store {
			srv := s3test.Start(b)
			return mustOpen(b, srv.StoreURL("bench"), Options{AWSAccessKeyID: srv.AccessKey, AWSSecretAccessKey: srv.SecretKey})
		},
		"supabase": func(b *testing.B) Store {
			return mustOpen(b, "supabase://", newSupabaseDouble(b).opts())
		},
	}
	for _, name := range []string{"file", "s3", "supabase"} {
		b.Run(name, func(b *testing.B) {
			s := stores[name](b)
			ctx := context.Background()
			b.SetBytes(2 * size)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				key := "bench/" + itoa(int64(i))
				if err := s.Put(ctx, key, &genReader{size: size}, -1); err != nil {
					b.Fatal(err)
				}
				rc, _, err := s.Get(ctx, key)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
				if err := s.Delete(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
