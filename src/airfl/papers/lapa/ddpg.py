"""The DDPG agent that solves P1 (paper Sec. IV-C, eqs. 29-36; hyperparameters: ours, the paper
gives none).

State s_n = [p^(n-1)^2 / P_0, T_th(p^(n-1)) / T, log10(L^(n-1) / L_ref)] (eq. 29, normalised);
action a_n in [0, 1]^K from a sigmoid actor (eq. 30) plus Gaussian exploration (eq. 32); reward
-L(p^(n)) / L_ref (eq. 31); critic target y = r + gamma Q'(s', mu'(s')) (eq. 33), MSE loss
(eq. 34), deterministic policy gradient (eq. 35), soft target updates with tau (eq. 36).
Every draw comes from the generators passed in (the project's streams), so a seed gives the
same policy bit for bit on one machine.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class DdpgConfig:
    episodes: int
    steps: int
    hidden: tuple[int, ...]
    lr_actor: float
    lr_critic: float
    gamma: float
    tau: float
    batch: int
    buffer: int
    warmup: int
    expl_sigma: float
    expl_decay: float
    expl_min: float


def _mlp(inputs: int, hidden: tuple[int, ...], outputs: int) -> nn.Sequential:
    layers, width = [], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


class ReplayBuffer:
    """A ring buffer of transitions (s, a, r, s') with uniform minibatch sampling."""

    def __init__(self, capacity: int, state_dim: int, action_dim: int):
        self.s = np.zeros((capacity, state_dim))
        self.a = np.zeros((capacity, action_dim))
        self.r = np.zeros(capacity)
        self.s2 = np.zeros((capacity, state_dim))
        self.size, self.head, self.capacity = 0, 0, capacity

    def add(self, s, a, r, s2) -> None:
        i = self.head
        self.s[i], self.a[i], self.r[i], self.s2[i] = s, a, r, s2
        self.head = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch: int, generator: np.random.Generator):
        idx = generator.integers(0, self.size, size=batch)
        as_t = lambda x: torch.as_tensor(x[idx], dtype=torch.float64)  # noqa: E731
        return as_t(self.s), as_t(self.a), as_t(self.r).unsqueeze(1), as_t(self.s2)


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """theta' <- tau theta + (1 - tau) theta' (eq. 36)."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters()):
            t.mul_(1.0 - tau).add_(tau * s)


@dataclass
class DdpgResult:
    best_action: np.ndarray
    best_value: float
    episode_reward: np.ndarray          # mean reward per episode (the learning curve)
    episode_best: np.ndarray            # best objective seen up to each episode
    greedy_action: np.ndarray           # the actor's output from the starting state
    actor: dict[str, np.ndarray]        # the trained actor's weights (the policy)
    evaluations: int                    # objective evaluations made (the start's included)


def train_ddpg(evaluate: Callable[[np.ndarray], tuple[float, int]], *, start: np.ndarray,
               rounds: int, reference: float, config: DdpgConfig, seed: int,
               generator: np.random.Generator) -> DdpgResult:
    """Train on `evaluate(action) -> (L, T_th)`; each episode starts from the action `start`
    (p_bar). Returns the best action seen (p* = argmin L) and the learning curve."""
    k = start.size
    with torch.random.fork_rng(devices=[]):   # initialisation from the caller's seed only
        torch.manual_seed(seed)
        actor = nn.Sequential(_mlp(k + 2, config.hidden, k), nn.Sigmoid()).double()
        critic = _mlp(2 * k + 2, config.hidden, 1).double()
    actor_t, critic_t = copy.deepcopy(actor), copy.deepcopy(critic)
    opt_a = torch.optim.Adam(actor.parameters(), lr=config.lr_actor)
    opt_c = torch.optim.Adam(critic.parameters(), lr=config.lr_critic)
    buffer = ReplayBuffer(config.buffer, k + 2, k)

    def state(action: np.ndarray, value: float, t_th: int) -> np.ndarray:
        return np.concatenate([action, [t_th / rounds, math.log10(value / reference)]])

    value0, t0 = evaluate(start)
    evaluations = 1
    best_action, best_value = start.copy(), value0
    sigma, steps_done = config.expl_sigma, 0
    rewards, bests = [], []
    for _ in range(config.episodes):
        s, total = state(start, value0, t0), 0.0
        for _ in range(config.steps):
            if steps_done < config.warmup:
                a = generator.random(k)
            else:
                with torch.no_grad():
                    a = actor(torch.as_tensor(s).unsqueeze(0))[0].numpy()
                a = np.clip(a + sigma * generator.standard_normal(k), 0.0, 1.0)
            value, t_th = evaluate(a)
            evaluations += 1
            reward = -value / reference
            s2 = state(a, value, t_th)
            buffer.add(s, a, reward, s2)
            if value < best_value:
                best_action, best_value = a.copy(), value
            s, total, steps_done = s2, total + reward, steps_done + 1
            if buffer.size >= max(config.batch, config.warmup):
                _update(buffer, config, actor, critic, actor_t, critic_t, opt_a, opt_c,
                        generator)
        sigma = max(config.expl_min, sigma * config.expl_decay)
        rewards.append(total / config.steps)
        bests.append(best_value)
    with torch.no_grad():
        greedy = actor(torch.as_tensor(state(start, value0, t0)).unsqueeze(0))[0].numpy()
    policy = {k: v.detach().numpy().copy() for k, v in actor.state_dict().items()}
    return DdpgResult(best_action, best_value, np.array(rewards), np.array(bests), greedy, policy,
                      evaluations)


def _update(buffer, config, actor, critic, actor_t, critic_t, opt_a, opt_c, generator) -> None:
    s, a, r, s2 = buffer.sample(config.batch, generator)
    with torch.no_grad():                                               # eq. 33
        y = r + config.gamma * critic_t(torch.cat([s2, actor_t(s2)], dim=1))
    loss_c = ((critic(torch.cat([s, a], dim=1)) - y) ** 2).mean()       # eq. 34
    opt_c.zero_grad()
    loss_c.backward()
    opt_c.step()
    loss_a = -critic(torch.cat([s, actor(s)], dim=1)).mean()            # eq. 35
    opt_a.zero_grad()
    loss_a.backward()
    opt_a.step()
    soft_update(actor_t, actor, config.tau)                             # eq. 36
    soft_update(critic_t, critic, config.tau)
