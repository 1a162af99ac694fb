//go:build !race

package dsyncgocron_test

import "testing"

func skipUnderRace(*testing.T) {}
