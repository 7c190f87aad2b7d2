package redisstore

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// prelude is the Lua the scripts share (whether a sale state exists, the consumer
// group's creation), written once in prelude.lua.
//
//go:embed prelude.lua
var prelude string

// newScript returns the script of src with the prelude before it. The prelude is part
// of the source, hence of the SHA1 EVALSHA sends, so a server that lacks the script
// answers NOSCRIPT and gets the whole text, as for any script.
func newScript(src string) *redis.Script {
	return redis.NewScript(prelude + src)
}
