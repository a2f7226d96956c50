// Package s3test starts a real S3 server for tests: the versitygw binary with
// its posix backend on a temporary folder, listening on a random 127.0.0.1
// port, with its own access keys and a bucket made ready. It builds nothing;
// .ci/run installs the binary (go install
// github.com/versity/versitygw/cmd/versitygw@v1.8.0). Without the binary the
// tests that need it fail when CI is set and are skipped otherwise.
package s3test
