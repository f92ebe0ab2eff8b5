"""Ultimate Texas Hold'em rules engine (NSW, The Star, Version 4, 2025).

Pure game logic, no I/O. Modules are named for what they hold:

- ``cards``      card notation and the 52-card deck (rules 3.1, 3.3)
- ``evaluator``  best five of five to seven cards, exact integer ranks (rule 8)
- ``deal``       shuffler / card-shoe order -> community, dealer and box cards (rules 7, 11.1)
- ``wagers``     wager placement and betting decisions (rules 5, 9, 10.5)
- ``paytables``  Trips, Blind and jackpot pay tables (rules 10.9, 10.12, 15.2.9)
- ``settlement`` settlement of a round in integer cents (rules 6.2-6.3, 10, 11.8)
- ``jackpot``    progressive jackpot pool and awards (rule 15)
- ``parsheet``   exact combinatorial par sheet (category counts, Trips return, jackpot odds)
"""
