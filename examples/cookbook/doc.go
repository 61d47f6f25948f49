// Package cookbook holds the minimal contracts the cookbook pages (docs/cookbook) quote: each
// contests a few lines of SQL, the component, with one of the models a team picks from
// package contested/history, the way a team would contest its own.
package cookbook
