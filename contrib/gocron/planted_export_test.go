package dsyncgocron

// PlantIgnoresHold plants the Locker's bug for planted_test.go, which,
// in package dsyncgocron_test, cannot reach plantIgnoresHold.
var PlantIgnoresHold = plantIgnoresHold
