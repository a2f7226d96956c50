// Command bench_store measures snapshot+upload and download+restore of a
// profile through the real director/profiles Manager against a real S3
// server (versitygw on a random 127.0.0.1 port), without and with age
// encryption, and reports wall time, archive size, throughput of raw profile
// data and peak RSS, with the two targets of issue 4: encryption adds at most
// 15% to snapshot time, and peak RSS stays under 100 MB for a 600 MB profile.
//
//	go run ./bench_store               # 600 MB profile-like tree, 3 repetitions
//	go run ./bench_store -size 150     # well under a minute of set-up
//	go run ./bench_store -json         # one JSON object on stdout
//	go run ./bench_store -pprof DIR    # CPU and allocation profiles of every child
//	go run ./bench_store -part-size 8  # S3 part size in MiB (default: storage's)
//	GODEBUG=gctrace=1 go run ./bench_store -v   # children's stderr passed through
//
// Each measured operation runs in a child process (this binary re-executed
// with a hidden subcommand), so that the peak RSS reported is the child's own
// (getrusage of the child; the server and the tree generator are not in it).
// Cases alternate plain and encrypted within each repetition and the median
// of the repetitions is reported, to damp the noise of a shared machine.
//
// Everything lives in one temporary folder (tree, server data, catalogs,
// restore targets) that is removed on exit, with the server, also on failure
// or interrupt. The package owns nothing else.
package main
