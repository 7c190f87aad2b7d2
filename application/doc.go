// Package application holds seckill's use cases. Each is a type with one verb and a
// Handle method; it depends only on the domain and on the interfaces in ports, so the
// same use case runs on Redis and PostgreSQL, on the embedded stand-ins, or on the
// in-memory fakes its tests use.
package application
