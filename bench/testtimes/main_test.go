package main

import (
	"reflect"
	"testing"
)

func TestParsePhases(t *testing.T) {
	got := parsePhases("compile 2.5 3 0.5 1000\n" +
		"fuzz-ci 3.5 3 1 2000\n" +
		"Command exited with non-zero status 1\n" +
		"fuzz-ci 4 5 0.5 3000\n" +
		"unit 10 20 2 500\n" +
		"fuzz-ci 1 1 0 100\n")
	want := []phase{
		{name: "compile", wall: 2.5, user: 3, sys: 0.5, maxRSS: 1000},
		{name: "fuzz-ci", wall: 8.5, user: 9, sys: 1.5, maxRSS: 3000},
		{name: "unit", wall: 10, user: 20, sys: 2, maxRSS: 500},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
