// Package bytesize reads and writes the sizes director's settings take
// (--max-size, --max-unpacked): a whole number of bytes ("524288000"), or
// a number with a unit ("500MB", "500M", "1.5GiB", "2g").
//
// Units are case-insensitive. KB, MB, GB and TB are powers of 1000 (as disk
// makers and the SI write them); KiB, MiB, GiB and TiB, their short forms
// Ki, Mi, Gi and Ti, and a bare K, M, G or T are powers of 1024, as GNU
// coreutils (du, sort -h, truncate) and Docker read them. B is bytes.
// Format writes binary units, rounded up, so that a size it prints in a
// hint is never less than the one it stands for. It keeps no package state.
package bytesize
