package main

import "github.com/urfave/cli/v2"

func profileCommands() []*cli.Command { return nil }
