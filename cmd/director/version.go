package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"director/catalog"
	"director/snapshot"
)

// versionJSON is what `director version` reports: the build, and the
// formats it reads and writes, which decide what it can share with other
// machines' directors (README, "Upgrading").
type versionJSON struct {
	Commit        string `json:"commit,omitempty"` // the VCS revision built, when the build recorded it
	CommitTime    string `json:"commit_time,omitempty"`
	Modified      bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Module        string `json:"module_version,omitempty"`
	Go            string `json:"go"`
	ArchiveFormat int    `json:"archive_format"`        // the archive format it writes
	ReadsFormats  []int  `json:"reads_archive_formats"` // the archive formats it reads
	CatalogSchema int    `json:"catalog_schema"`        // the newest catalog schema it knows (it migrates to it)
}

// versionCommands returns `director version`.
func versionCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "version",
		Usage: "print this director's build and the archive formats and catalog schema it knows",
		Description: "Prints the commit it was built from, the archive format it writes and those it reads, and the\n" +
			"catalog schema it migrates a home's catalog to. It reads neither the home nor the store.\n" +
			"Machines that share a store need a director that reads the newest format any of them writes.",
		Action: func(c *cli.Context) error {
			v := buildVersion()
			getGlobals(c).emit(map[string]any{"status": "ok", "version": v}, func(w io.Writer) { printVersion(w, v) })
			return nil
		},
	}}
}

func buildVersion() versionJSON {
	v := versionJSON{ArchiveFormat: snapshot.FormatVersion, CatalogSchema: catalog.SchemaVersion()}
	for f := 1; f <= snapshot.FormatVersion; f++ {
		v.ReadsFormats = append(v.ReadsFormats, f)
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = bi.GoVersion
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Module = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func printVersion(w io.Writer, v versionJSON) {
	build := "commit unknown (built without version control information)"
	if v.Commit != "" {
		build = "commit " + v.Commit
		if v.CommitTime != "" {
			build += " (" + v.CommitTime + ")"
		}
		if v.Modified {
			build += ", with uncommitted changes"
		}
	}
	if v.Commit == "" && v.Module != "" {
		build = v.Module // go install director@VERSION
	}
	fmt.Fprintf(w, "director %s, %s\n", build, v.Go)
	fmt.Fprintf(w, "  archive format  writes %d, reads %d to %d\n", v.ArchiveFormat, v.ReadsFormats[0], v.ReadsFormats[len(v.ReadsFormats)-1])
	fmt.Fprintf(w, "  catalog schema  %d\n", v.CatalogSchema)
}
