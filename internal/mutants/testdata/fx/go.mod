module example.com/fx

go 1.26.0
