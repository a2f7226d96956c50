package main

import "github.com/urfave/cli/v2"

// profileOpenCommand is "director profile open"; nil until implemented.
func profileOpenCommand() *cli.Command { return nil }
