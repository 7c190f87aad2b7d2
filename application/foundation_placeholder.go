package application

// PassKey is the HMAC key of the waiting room's passes. PLACEHOLDER until the
// foundation lands on main.
type PassKey []byte
