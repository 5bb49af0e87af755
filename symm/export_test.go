package symm

// Team is the type of the teams a Place names, for the tests.
type Team = team
