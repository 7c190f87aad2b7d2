//go:build !seckilltestclock

package main

// shuffleSaved runs between a waiting room's shuffle saved and its install; a test
// build pauses there (testshuffle.go).
func shuffleSaved() {}
