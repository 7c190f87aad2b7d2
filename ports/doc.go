// Package ports declares what the use cases need from the outside world. The core owns
// these interfaces; adapters implement them.
package ports
