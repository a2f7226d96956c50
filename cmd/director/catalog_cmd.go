package main

import "github.com/urfave/cli/v2"

func catalogCommands() []*cli.Command { return nil }
