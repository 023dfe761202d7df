import json
json.dump({"gamma": 0.05017, "omega0": 3.1589, "period": 1.9891, "q_factor": 31.48}, open("results.json", "w"))
