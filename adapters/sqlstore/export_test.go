package sqlstore

// Becoming is becoming, for the tests of the status conditions it builds.
var Becoming = becoming
